"""Each process's subscription to the push notifier, for what it may reuse (``freshness``).

Started on first need, in the process that serves (a forked worker starts its own), when the
site lets a process reuse the catalog version or tokens' rows and the notifier can be followed
(``postgres``, ``redis``): one daemon thread with an event loop of its own and one connection,
whatever the server. What it hears:

- ``catalog``: the catalog changed; every process reads its version again on its next request;
- ``token:<checksum>``: that access token was revoked or changed (its row is dropped);
- ``user:<id>``: that user was made inactive or deleted (the rows of its tokens are dropped);
- the subscription made again, or lost: everything kept is read again (a message may have been
  missed); until it is up nothing is reused.

The messages carry no secret: a token's checksum is the SHA-256 the database indexes, not the
token. A forged message can only make processes read again.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import Any

from .. import freshness
from ..auth import tokens
from .backends import CATALOG, get_notifier

__all__ = [
    "TOKEN",
    "TOKENS",
    "USER",
    "heard",
    "start",
]

logger = logging.getLogger("mcp_tools.notify")

TOKEN = "token:"  # noqa: S105 - a message prefix
USER = "user:"
TOKENS = "tokens"  # every token row (a transaction that changed many)


class _Following:
    """This process's subscription: its thread and the loop it runs on."""

    def __init__(self, notifier: Any) -> None:
        self.notifier = notifier
        self.loop = asyncio.new_event_loop()
        self.task: asyncio.Task[None] | None = None
        self.thread = threading.Thread(target=self._run, name="mcp-tools-watch", daemon=True)

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.task = self.loop.create_task(self.notifier.follow(_connected, heard, _lost))
        try:
            self.loop.run_until_complete(self.task)
        except asyncio.CancelledError:
            pass
        except Exception:  # pragma: no cover - a notifier bug: nothing is reused from now on
            logger.exception("The notifier's subscription for reused reads stopped")
        finally:
            freshness.lost()
            self.loop.close()

    def stop(self, timeout: float = 5) -> None:
        task = self.task
        if task is not None and not self.loop.is_closed():
            self.loop.call_soon_threadsafe(task.cancel)
        self.thread.join(timeout)


_following: _Following | None = None


def start() -> bool:
    """Start this process's subscription if the notifier can be followed; whether it pushes.

    ``freshness.reusable`` calls it once per process (the first time something may be reused).
    """
    global _following
    notifier = get_notifier()
    if not notifier.followable:
        return False
    _following = _Following(notifier)
    _following.thread.start()
    return True


def stop() -> None:
    """End this process's subscription (tests; ``freshness.reset`` makes the next use start one)."""
    global _following
    following, _following = _following, None
    if following is not None:
        following.stop()


def _connected() -> None:
    tokens.forget_all()
    freshness.heard()


def _lost() -> None:
    freshness.lost()
    tokens.forget_all()


def heard(message: str) -> None:
    """One message (also called by the process that publishes it, for its own requests)."""
    if message == CATALOG:
        freshness.changed()
    elif message.startswith(TOKEN):
        tokens.forget(message[len(TOKEN) :])
    elif message.startswith(USER):
        tokens.forget_user(message[len(USER) :])
    elif message == TOKENS:
        tokens.forget_all()
    else:  # not ours: whatever it means, read everything again
        freshness.changed()
        tokens.forget_all()
