"""An audit row recorded outside any request, as the tests of the audit buffer record them."""

from __future__ import annotations

from mcp_tools import audit
from mcp_tools.types import Principal
from tests.support.mcp_client import MODERN


def record_echo(key: str, request_id: str) -> None:
    """One successful ``echo`` call of the principal ``key`` into the process's audit buffer."""
    audit.record(
        audit.CallEvent(
            principal=Principal(key=key),
            tool_name="echo",
            tool_version=1,
            arguments={},
            sensitive=frozenset(),
            outcome="ok",
            duration_ms=1.0,
            request_id=request_id,
            protocol_version=MODERN,
        )
    )
