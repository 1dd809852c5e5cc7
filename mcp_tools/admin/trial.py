"""Try it: one ``tools/call`` of a saved tool by a staff user, served exactly as an MCP call.

The request goes through ``services.handle_request`` like one from the endpoint: the catalog
lookup, argument validation, the rate limit (the staff user's own bucket, as ``user:<pk>``), the
runner and the audit row (principal ``user:<pk>``, client ``django-admin``, and the scopes).
Its grant key is ``user:<pk>/admin`` (``admin_grant_key``), which no OAuth client id can produce.

Under an OAuth backend the trial runs within a real grant: the scopes this user could be
granted (what ``mcp_token --scopes all`` and the consent page would give: active scopes not
restricted to groups the user is not in, ``grantable_scopes``), so Try it never reaches a tool no token
of this user could call. A tool outside them is refused before the call, saying which scope is
missing and why. Under a backend without scopes (the open one) every tool is callable, as for
any caller of the endpoint.
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
from ..types import Principal, admin_grant_key

__all__ = ["grantable_scopes", "try_tool"]

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


def scoped_backend() -> bool:
    """Whether the configured backend restricts by scope (an OAuth backend)."""
    from ..auth import get_auth_backend
    from ..auth.oauth import OAuthBackend

    return isinstance(get_auth_backend(), OAuthBackend)


def grantable_scopes(user: Any) -> list[str] | None:
    """The scopes ``user`` could be granted (``grantable_scopes``: active, not restricted to groups the
    user is not in); None when the backend does not restrict by scope."""
    if not scoped_backend():
        return None
    from ..auth.oauth import grantable_scopes
    from ..models import Scope

    return grantable_scopes(user, sorted(Scope.objects.filter(active=True).values_list("name", flat=True)))


def staff_principal(user: Any, scopes: list[str] | None = None) -> Principal:
    """The staff user as a caller of the ``django-admin`` client: with ``scopes`` granted (an
    OAuth backend), or unrestricted (None: a backend without scopes)."""
    subject = f"user:{user.pk}"
    return Principal(
        key=admin_grant_key(subject),
        user=user,
        client_id=CLIENT_ID,
        granted=None if scopes is None else frozenset(scopes),
        user_id=user.pk,
        subject=subject,
    )


def missing_scopes(name: str, user: Any, scopes: list[str]) -> str:
    """Why ``user`` cannot call the tool ``name`` with ``scopes``: "" when nothing is missing
    (or the tool is not in the catalog: the call answers that)."""
    from ..catalog import get_catalog
    from ..models import Scope

    catalog = get_catalog()
    tool = catalog.get(name)
    if tool is None:
        return ""
    held = catalog.scopes.expand(frozenset(scopes))
    missing = sorted(tool.required_scopes - held)
    if not missing:
        return ""
    rows = {s.name: s for s in Scope.objects.filter(name__in=missing).prefetch_related("groups")}
    reasons = []
    for scope in missing:
        row = rows.get(scope)
        if row is None:
            why = "no such scope exists"
        elif not row.active:
            why = "the scope is inactive, so it is never granted"
        else:
            groups = ", ".join(sorted(g.name for g in row.groups.all())) or "no group"
            why = f"it is granted only to members of {groups}, and you are in none of them"
        reasons.append(f"{scope} ({why})")
    return (
        f"Not run: the tool requires {', '.join(missing) if len(missing) > 1 else missing[0]}, which no token "
        f"of yours could carry: {'; '.join(reasons)}. A client of yours would get 'Unknown tool'."
    )


def try_tool(name: str, arguments: dict[str, Any], user: Any, version: str) -> Trial:
    params = {"name": name, "arguments": arguments}
    request = Request(id=f"admin-try-{uuid.uuid4().hex[:12]}", method="tools/call", params=params)
    trial = Trial()
    scopes = grantable_scopes(user)
    if scopes is not None:
        refusal = missing_scopes(name, user, scopes)
        if refusal:
            trial.http_status, trial.refusal = 403, refusal
            return trial

    def emit(message: bytes) -> None:
        trial.notifications.append(orjson.loads(message))

    principal = staff_principal(user, scopes)
    # The admin is an MCP Apps host itself (its preview): app-only tools can be tried.
    exchange = Exchange(revision=get_revision(version), principal=principal, headers={}, emit=emit, apps=True)
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
