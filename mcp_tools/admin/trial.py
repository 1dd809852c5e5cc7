"""Try it: one ``tools/call`` of a saved tool by a staff user, served exactly as an MCP call.

The request goes through ``services.handle_request`` like one from the endpoint: the catalog
lookup, argument validation, the rate limit (the staff user's own bucket, as ``user:<pk>``), the
runner and the audit row (principal ``user:<pk>``, client ``django-admin``).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

import orjson

from ..auth import AuthFailure
from ..protocol.jsonrpc import Request
from ..protocol.versions import get_revision
from ..services import Exchange, handle_request
from ..types import Principal

CLIENT_ID = "django-admin"


@dataclass(slots=True)
class Trial:
    """What a client would have received."""

    response: dict[str, Any] | None = None  # the JSON-RPC response
    notifications: list[dict[str, Any]] = field(default_factory=list)  # progress and log, in order
    http_status: int = 200
    refusal: str = ""  # an HTTP-level refusal (403 insufficient_scope) instead of a response

    @property
    def result(self) -> dict[str, Any] | None:
        return None if self.response is None else self.response.get("result")

    @property
    def error(self) -> dict[str, Any] | None:
        return None if self.response is None else self.response.get("error")


def staff_principal(user: Any) -> Principal:
    """The staff user as a caller: the key an OAuth token of the same user gets, no scope limit."""
    return Principal(key=f"user:{user.pk}", user=user, client_id=CLIENT_ID)


def try_tool(name: str, arguments: dict[str, Any], user: Any, version: str) -> Trial:
    params = {"name": name, "arguments": arguments}
    request = Request(id=f"admin-try-{uuid.uuid4().hex[:12]}", method="tools/call", params=params)
    trial = Trial()

    def emit(message: bytes) -> None:
        trial.notifications.append(orjson.loads(message))

    exchange = Exchange(revision=get_revision(version), principal=staff_principal(user), headers={}, emit=emit)
    try:
        answer = handle_request(request, exchange)
    except AuthFailure as exc:
        trial.http_status, trial.refusal = exc.status, f"{exc.error}: {exc.description}"
        return trial
    if answer is None:
        trial.refusal = "The call was cancelled; a client receives nothing."
        return trial
    trial.http_status, body = answer
    trial.response = orjson.loads(body)
    return trial
