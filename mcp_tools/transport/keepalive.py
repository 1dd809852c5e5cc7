"""How many JSON answers the ASGI front sent per client connection (``KEEPALIVE_REQUESTS``)."""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

from ..conf import mcp_settings

__all__ = ["Answers", "last_answer_on"]

AsgiScope = MutableMapping[str, Any]


class Answers:
    """JSON answers per client connection, for ``KEEPALIVE_REQUESTS``.

    uvicorn's workers share one listening socket, and asyncio accepts every pending connection
    when it wakes: the worker that wakes first takes a whole burst of new connections, and with
    keep-alive they stay with it. All of a client's connections on one worker cut what two
    workers serve by about 40 % (docs/explanation/capacity.md, "Where the ASGI rows swing"). Asking the
    client to reconnect after a bounded number of answers spreads them again: the worker that
    is idle accepts first. A connection is known by its client address and port (ASGI gives no
    connection id); a port reused after a connection ended only starts with its count. The
    loop's thread alone counts (no lock); at most ``MAX_KNOWN`` connections are followed (past
    that the counts start again, which only delays a close).
    """

    MAX_KNOWN = 10_000

    __slots__ = ("counts",)

    def __init__(self) -> None:
        self.counts: dict[tuple[str, int], int] = {}

    def last_on(self, scope: AsgiScope) -> bool:
        """Count one answer; True when it is the last on its connection (HTTP/1.1 only: an
        HTTP/2 response may not carry Connection, an HTTP/1.0 one closes anyway)."""
        limit = mcp_settings.KEEPALIVE_REQUESTS
        client = scope.get("client")
        if limit <= 0 or not client or scope.get("http_version") != "1.1":
            return False
        key = (client[0], client[1])
        counts = self.counts
        count = counts.get(key, 0) + 1
        if count >= limit:
            counts.pop(key, None)
            return True
        if count == 1 and len(counts) >= self.MAX_KNOWN:
            counts.clear()
        counts[key] = count
        return False


_answers = Answers()
last_answer_on = _answers.last_on
