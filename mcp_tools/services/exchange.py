"""One JSON-RPC request being served (``Exchange``) and the framing every method shares."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..cancel import CancelFlag
from ..models import McpSession
from ..protocol.jsonrpc import Request, encode_result
from ..protocol.negotiation import ModernRequestMeta
from ..protocol.versions import Revision
from ..tasking import ResultWatch
from ..types import Principal
from .identity import modern_meta

__all__ = ["Exchange", "complete"]


@dataclass(slots=True)
class Exchange:
    """One JSON-RPC request being served, with what its era told us."""

    revision: Revision
    principal: Principal
    headers: Mapping[str, str]
    session: McpSession | None = None
    modern: ModernRequestMeta | None = None
    emit: Callable[[bytes], None] | None = None
    cancelled: CancelFlag = field(default_factory=lambda: CancelFlag(None))
    # Served under ASGI, where notification streams can stay open (listChanged).
    asgi: bool = False
    # tasks/result: until when (time.monotonic) the view keeps waiting for a working task, and
    # (when its response can be an SSE stream) what it sent on that stream so far.
    wait_until: float = 0.0
    watch: ResultWatch | None = None
    # The most bytes this request's answer may have (0: MAX_RESPONSE_BYTES); a batch gives each
    # item what is left of the bound.
    max_bytes: int = 0


def complete(req: Request, ex: Exchange, result: dict[str, Any]) -> bytes:
    """The framed response to ``req``; modern results carry ``resultType`` and server ``_meta``."""
    if ex.revision.modern:
        result.setdefault("resultType", "complete")
        result.setdefault("_meta", modern_meta())
    return encode_result(req.id, result)
