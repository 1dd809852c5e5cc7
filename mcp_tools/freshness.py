"""What a process may reuse instead of asking a shared store again, and what cuts that short.

Two reads a request would otherwise make every time may be reused for a bounded time where the
site allows it: the catalog version (``CATALOG_VERSION_MAX_AGE``, ``catalog.get_catalog``) and
an access token's row (``TOKEN_CACHE_SECONDS``, ``auth.tokens``). With a push notifier
(``postgres``, ``redis``) each process keeps one subscription (``notify.watch``) that reports
here: a catalog change published anywhere moves :data:`state.epoch`, which makes every process
read the version again on its next request, and a revoked token is dropped from every
process's token rows. The bound of the settings is then reached only when a message is lost on
a connection that still looked alive.

While a push notifier is configured but this process does not hear it (its subscription not
made yet, or lost) nothing is reused: every request reads, as with the settings at 0. With a
notifier that does not push (``polling``, ``none``, or one of the site's own), reuse is bounded
by the settings alone.

This module imports nothing of the app but its settings; the notify package registers the
function that starts a process's subscription (:func:`set_starter`).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable

__all__ = ["changed", "heard", "lost", "reset", "reusable", "set_starter", "state"]


class _State:
    """The process's view of its subscription (plain attributes: read on every request)."""

    __slots__ = ("epoch", "listening", "pushes", "started")

    def __init__(self) -> None:
        # Moves with every catalog message, and whenever the subscription is made or lost:
        # what was read at an older epoch is read again.
        self.epoch = 0
        self.listening = False  # the subscription is up: messages reach this process
        # Whether the configured notifier pushes: assumed until its start says otherwise, so
        # nothing is reused while that is not known.
        self.pushes = True
        self.started = False  # this process asked for its subscription


state = _State()
_starter: Callable[[], bool] | None = None
_lock = threading.Lock()


def set_starter(starter: Callable[[], bool] | None) -> None:
    """``starter()`` starts this process's subscription and says whether the notifier pushes."""
    global _starter
    _starter = starter


def reusable() -> bool:
    """Whether a value read earlier may be reused now (within its own bound): the
    subscription is up, or there is none to wait for. Starts the subscription on first use."""
    if not state.started:
        _start()
    return state.listening or not state.pushes


def _start() -> None:
    with _lock:
        if state.started:
            return
        state.started = True
        starter = _starter
    pushes = bool(starter()) if starter is not None else False
    with _lock:
        state.pushes = pushes


def changed() -> None:
    """The catalog changed (a message, or this process published one): read it again."""
    with _lock:
        state.epoch += 1


def heard() -> None:
    """The subscription is up (made or made again): what was read before is read again, since
    a message may have been missed while it was down."""
    with _lock:
        state.epoch += 1
        state.listening = True


def lost() -> None:
    """The subscription is down: nothing is reused until it is up again."""
    with _lock:
        state.listening = False
        state.epoch += 1


def reset() -> None:
    """Forget everything (tests; a forked child, whose parent's subscription is not its own)."""
    global _lock
    _lock = threading.Lock()  # (in a forked child another thread may have held it)
    state.listening = False
    state.pushes = True
    state.started = False
    state.epoch += 1


os.register_at_fork(after_in_child=reset)
