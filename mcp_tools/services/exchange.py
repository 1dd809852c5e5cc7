"""One JSON-RPC request being served (``Exchange``) and the framing every method shares."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..cancel import CancelFlag
from ..models import McpSession
from ..protocol import apps as apps_wire
from ..protocol.jsonrpc import Request, encode_result
from ..protocol.negotiation import ModernRequestMeta
from ..protocol.versions import Revision
from ..tasking import ResultWatch
from ..types import Principal
from .identity import modern_meta
from .sessions import declared_capabilities

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
    # MCP Apps: whether the client declared io.modelcontextprotocol/ui (None: not read yet; the
    # admin's Try it, a host itself, sets True).
    apps: bool | None = None

    def apps_declared(self) -> bool:
        """Whether the client declared MCP Apps: this request's capabilities (2026-07-28) or the
        session's (read once, only when asked: few requests need it)."""
        if self.apps is None:
            if self.modern is not None:
                self.apps = apps_wire.client_declared(self.modern.client_capabilities)
            else:
                self.apps = self.session is not None and apps_wire.client_declared(declared_capabilities(self.session))
        return self.apps


def complete(req: Request, ex: Exchange, result: dict[str, Any]) -> bytes:
    """The framed response to ``req``; modern results carry ``resultType`` and server ``_meta``."""
    if ex.revision.modern:
        result.setdefault("resultType", "complete")
        result.setdefault("_meta", modern_meta())
    return encode_result(req.id, result)
