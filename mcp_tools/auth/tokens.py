"""Access tokens' rows reused for a bounded time (``TOKEN_CACHE_SECONDS``), per process.

Off by default: ``DOTBackend`` then looks a token up on every request, and a revoked token is
refused by every process from the next request. With ``TOKEN_CACHE_SECONDS`` a process keeps
the row of a token it found (never of one it did not: an unknown token is looked up every
time) for that long, at most ``TOKEN_CACHE_SIZE`` rows, the oldest dropped first. The
row is checked as a fresh one is, on every request (expiry, resource, user active), so only what
changed in the database since it was read can be missed, and that is cut short:

- a token deleted (DOT's ``revoke()``, logout, a refresh that rotates it) or saved, and a user
  saved inactive or deleted, publish ``token:<checksum>`` / ``user:<id>`` after the commit
  (``notify.receivers``); every process's watcher drops those rows (``notify.watch``);
- while the subscription is down, or before it is up, no row is reused (``freshness``).

What no signal reports (a ``QuerySet.update()`` of tokens or users, SQL run by hand) and a
message lost on a connection that still looked alive are seen within ``TOKEN_CACHE_SECONDS``.
Keys are the tokens' SHA-256 checksums (what the database indexes), never the tokens.
"""

from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from .. import freshness
from ..conf import mcp_settings

__all__ = ["forget", "forget_all", "forget_user", "lookup"]


class _Rows:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        # checksum -> (row, monotonic deadline, the user id in the row)
        self.rows: OrderedDict[str, tuple[Any, float, str]] = OrderedDict()
        self.epoch = 0  # moves with every forget: a read begun before it is not kept


_rows = _Rows()


def _forked() -> None:
    global _rows
    _rows = _Rows()  # a forked child starts empty, its lock free


os.register_at_fork(after_in_child=_forked)


def lookup(checksum: str, read: Callable[[], Any], user_column: int) -> Any:
    """The token's row: kept, or ``read()`` (and kept when found). ``user_column``: the
    position of the user's id in the row (rows of a user made inactive are dropped)."""
    seconds = mcp_settings.TOKEN_CACHE_SECONDS
    if not seconds:
        return read()
    entry = _rows.rows.get(checksum)
    if entry is not None and time.monotonic() < entry[1] and freshness.reusable():
        return entry[0]
    epoch = _rows.epoch
    read_at = time.monotonic()
    row = read()
    if row is None or not freshness.reusable():
        return row
    with _rows.lock:
        if epoch != _rows.epoch:
            return row  # something was forgotten meanwhile: it may be this
        rows = _rows.rows
        rows[checksum] = (row, read_at + seconds, str(row[user_column]))
        rows.move_to_end(checksum)
        while len(rows) > mcp_settings.TOKEN_CACHE_SIZE:
            rows.popitem(last=False)
    return row


def forget(checksum: str) -> None:
    with _rows.lock:
        _rows.epoch += 1
        _rows.rows.pop(checksum, None)


def forget_user(user_id: str) -> None:
    with _rows.lock:
        _rows.epoch += 1
        for checksum in [c for c, entry in _rows.rows.items() if entry[2] == user_id]:
            del _rows.rows[checksum]


def forget_all() -> None:
    with _rows.lock:
        _rows.epoch += 1
        _rows.rows.clear()
