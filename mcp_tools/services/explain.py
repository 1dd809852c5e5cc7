"""Why a caller does or does not see a tool: every reason, in words an operator can act on.

The endpoint answers a tool the caller may not use exactly like a tool that does not exist
(secure by default), so from the outside "0 tools" and "Unknown tool" say nothing. This module
asks the same questions the catalog and the auth backend ask for a request, for one grant (a
user with a set of scopes, or a real token) and every tool row, enabled or not, and says which
failed: ``manage.py mcp_explain``, the admin's "Who can use this tool" panel and the tool
preview read it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from .. import discovery
from ..auth import get_auth_backend
from ..auth.base import AllowAnyBackend
from ..catalog import Catalog, get_catalog, user_permissions
from ..models import Scope, Tool
from ..registry import registry
from ..types import Principal

__all__ = [
    "audience",
    "describe",
    "discovery_preview",
    "explain",
    "grant_for",
    "grant_from_request",
    "is_oauth",
]


@dataclass(slots=True)
class Grant:
    """Who is asking: the principal a request would carry, and how it was made."""

    principal: Principal
    source: str  # "token", "scopes", "grantable" (what mcp_token would give), "open backend", "backend"

    @property
    def scoped(self) -> bool:
        """Whether scopes restrict this grant (OAuth, or a backend that sets them)."""
        return self.principal.granted is not None or self.principal.scopes is not None


@dataclass(slots=True)
class Verdict:
    tool: str
    visible: bool
    reasons: list[str] = field(default_factory=list)  # why not listed (empty when visible)
    notes: list[str] = field(default_factory=list)  # what else governs a call (rate limit, approval)


def is_oauth() -> bool:
    from ..auth.oauth import OAuthBackend

    return isinstance(get_auth_backend(), OAuthBackend)


def grant_for(user: Any, scopes: list[str] | None = None) -> Grant:
    """The grant of ``user`` with ``scopes`` under the configured backend. Under OAuth, None
    means every scope the user could be granted (what ``mcp_token --scopes all`` and the
    consent page would give); under another backend, no scope restriction."""
    backend = get_auth_backend()
    if isinstance(backend, AllowAnyBackend):
        from ..types import ANONYMOUS

        return Grant(ANONYMOUS, "open backend")
    pk = getattr(user, "pk", None)
    if is_oauth():
        source = "scopes" if scopes is not None else "grantable"
        granted = frozenset(scopes if scopes is not None else grantable_scopes(user))
        return Grant(Principal(key=f"user:{pk}", user=user, granted=granted, user_id=pk), source)
    # Another backend sets the scopes itself (already expanded), or none.
    restricted = frozenset(scopes) if scopes is not None else None
    principal = Principal(key=f"user:{pk}", user=user, scopes=restricted, user_id=pk)
    return Grant(principal, "scopes" if scopes is not None else "backend")


def grantable_scopes(user: Any) -> list[str]:
    from ..auth.oauth import grantable_scopes

    return grantable_scopes(user, sorted(Scope.objects.filter(active=True).values_list("name", flat=True)))


def grant_from_request(request: Any) -> Grant:
    """The grant of a real request (e.g. a bearer token): the backend authenticates it exactly
    as the endpoint would; raises ``AuthFailure`` when it would refuse it."""
    return Grant(get_auth_backend().authenticate(request), "token")


def explain(grant: Grant, names: list[str] | None = None) -> list[Verdict]:
    """A verdict for each tool row (or those named), in name order."""
    catalog = get_catalog()
    principal = catalog.scoped(grant.principal)
    rows = Tool.objects.order_by("name").prefetch_related("required_scopes")
    if names:
        rows = rows.filter(name__in=names)
    tools = list(rows)
    needed = frozenset().union(*(_permissions(t) for t in tools)) if tools else frozenset()
    held = user_permissions(principal.user, needed) if needed else frozenset()
    if principal.permissions is None:
        principal = dataclasses.replace(principal, permissions=held)
    return [_verdict(tool, grant, principal, held, catalog) for tool in tools]


def _permissions(tool: Tool) -> frozenset[str]:
    kind = registry.get(tool.handler_key)
    if kind is None or kind.why_unavailable(tool.handler_config or {}):
        return frozenset()  # not served here: said so instead
    try:
        return frozenset(kind.required_permissions(tool.handler_config or {}))
    except Exception:  # the catalog hides such a tool; say so below
        return frozenset({f"{tool.handler_key}:unavailable"})


def _who(principal: Principal) -> str:
    user = principal.user
    if user is None:
        return "the caller"
    name = user.get_username() if hasattr(user, "get_username") else str(user)
    return f"user {name}"


def _verdict(tool: Tool, grant: Grant, principal: Principal, held: frozenset[str], catalog: Catalog) -> Verdict:
    verdict = Verdict(tool.name, visible=False)
    reasons = verdict.reasons
    if not tool.enabled:
        reasons.append("disabled: enable it in the admin (or mcp_sync_toolsets for a model tool)")
    kind = registry.get(tool.handler_key)
    if kind is None:
        reasons.append(
            f"its tool kind {tool.handler_key!r} is not registered in this process "
            "(is the app that provides it in INSTALLED_APPS?)"
        )
    required = {s.name for s in tool.required_scopes.all()}
    if grant.scoped and required:
        _scope_reasons(required, principal, catalog, reasons)
    permissions = _permissions(tool)
    if permissions:
        _permission_reasons(permissions, principal, held, reasons)
    if tool.enabled and kind is not None:
        _serving_reasons(tool, principal, catalog, reasons)
    verdict.visible = not reasons
    if tool.rate_limit:
        verdict.notes.append(f"rate limited to {tool.rate_limit} per caller")
    if tool.requires_approval:
        verdict.notes.append("each call waits for a person's approval in the admin")
    return verdict


def _permission_reasons(
    permissions: frozenset[str], principal: Principal, held: frozenset[str], reasons: list[str]
) -> None:
    if principal.user is None:
        reasons.append(
            f"needs the Django permissions {', '.join(sorted(permissions))}, and this backend has no "
            "user (the open backend, or a client-credentials token): use a backend that "
            "authenticates users, e.g. the DOT backend"
        )
        return
    if not getattr(principal.user, "is_active", False):
        reasons.append(f"{_who(principal)} is inactive")
        return
    missing = sorted(permissions - held)
    if missing:
        reasons.append(
            f"{_who(principal)} lacks the Django permission{'s' if len(missing) > 1 else ''} "
            f"{', '.join(missing)}: grant {'them' if len(missing) > 1 else 'it'} to the user or one "
            "of their groups (admin: Users or Groups)"
        )


def _serving_reasons(tool: Tool, principal: Principal, catalog: Catalog, reasons: list[str]) -> None:
    """Why an enabled tool of a registered kind is not listed: the catalog's word and the backend's."""
    compiled = catalog.get(tool.name)
    if compiled is not None and compiled.unavailable:
        reasons.append(
            f"not served by this process: {compiled.unavailable} (a handlers module added after a server "
            "started is loaded when it restarts)"
        )
    elif not reasons:
        if compiled is None:
            reasons.append("not in the current catalog yet (it changes with the next catalog version)")
        elif not get_auth_backend().can_see(compiled, principal):
            reasons.append(f"the auth backend {type(get_auth_backend()).__name__} refuses it (can_see)")


def _scope_reasons(required: set[str], principal: Principal, catalog: Catalog, reasons: list[str]) -> None:
    active = set(catalog.scopes.closure)
    inactive = sorted(required - active)
    if inactive:
        reasons.append(
            f"requires the inactive or unknown scope{'s' if len(inactive) > 1 else ''} {', '.join(inactive)}: "
            "no token can carry it (activate it in the admin: Scopes)"
        )
    missing = sorted((required & active) - (principal.scopes or frozenset()))
    if not missing:
        return
    if not is_oauth():  # a backend of the site's own: it alone knows how scopes are given
        reasons.extend(f"the grant lacks the scope {name}" for name in missing)
        return
    from ..auth.oauth import grantable_scopes

    grantable = set(grantable_scopes(principal.user, missing)) if principal.user is not None else set()
    for name in missing:
        if name in grantable:
            reasons.append(f"the grant lacks the scope {name} ({_who(principal)} could be granted it: ask for it)")
        else:
            reasons.append(
                f"the grant lacks the scope {name}, and {_who(principal)} can never be granted it "
                "(restricted to groups the user is not in)"
            )


def describe(grant: Grant) -> str:
    """One line: whose grant, with which scopes (as granted, then what they imply)."""
    principal = grant.principal
    if not grant.scoped:
        return f"{_who(principal)} under {type(get_auth_backend()).__name__} ({grant.source}): no scope restriction"
    granted = sorted(principal.granted if principal.granted is not None else principal.scopes or ())
    expanded = sorted(get_catalog().scopes.expand(frozenset(granted)) - set(granted))
    how = {"grantable": "every scope the user could be granted", "token": "the token's scopes"}.get(
        grant.source, "the scopes given"
    )
    client = f", client {principal.client_id}" if principal.client_id else ""
    implied = f" (implying {' '.join(expanded)})" if expanded else ""
    return f"{_who(principal)}{client}, {how}: {' '.join(granted) or '(none)'}{implied}"


@dataclass(slots=True)
class Audience:
    """Who could use one tool: its scopes (and the groups a scope is restricted to), and its
    Django permissions with the groups that hold them and how many users hold them directly."""

    # (scope, groups it is restricted to; [] = anyone; None = not shown to this viewer)
    scopes: list[tuple[str, list[str] | None]]
    # (permission, groups holding it, users holding it directly; None = not shown to this viewer)
    permissions: list[tuple[str, list[str] | None, int | None]]
    open_backend: bool


def audience(tool: Tool, *, scope_groups: bool = True, groups: bool = True, users: bool = True) -> Audience:
    """For the admin's "Who can use this tool" panel: a few queries per scope and permission.

    What the viewer may not see is neither read nor shown (None): the groups a scope is
    restricted to (``scope_groups``), the groups holding a permission (``groups``), how many
    users hold it directly (``users``).
    """
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group, Permission

    required = tool.required_scopes.order_by("name")
    scopes: list[tuple[str, list[str] | None]] = (
        [(scope.name, sorted(g.name for g in scope.groups.all())) for scope in required.prefetch_related("groups")]
        if scope_groups
        else [(name, None) for name in required.values_list("name", flat=True)]
    )
    rows: list[tuple[str, list[str] | None, int | None]] = []
    user_model = get_user_model()
    for name in sorted(_permissions(tool)):
        app_label, _, codename = name.partition(".")
        found = Permission.objects.filter(content_type__app_label=app_label, codename=codename)
        holders = None
        if groups:
            holders = sorted(Group.objects.filter(permissions__in=found).values_list("name", flat=True).distinct())
        direct = None
        if users:
            direct = 0
            if hasattr(user_model, "user_permissions"):
                direct = (
                    user_model._default_manager.filter(user_permissions__in=found, is_active=True).distinct().count()
                )
        rows.append((name, holders, direct))
    return Audience(scopes, rows, isinstance(get_auth_backend(), AllowAnyBackend))


@dataclass(slots=True)
class DiscoveryPreview:
    """What progressive discovery gives a grant: whether it is on, its entry set, a sample search."""

    mode: str  # the mode configured for the grant's client: off, on or auto
    active: bool  # whether tools/list gives this grant the entry set
    usable: int  # the tools it may use (what the mode off lists, for a model)
    entry: list[str]  # the tools marked always listed that it may use
    query: str = ""
    found: list[dict[str, Any]] = field(default_factory=list)
    more: bool = False


def discovery_preview(grant: Grant, query: str = "", limit: int = 10) -> DiscoveryPreview:
    """The grant's entry set, and what ``search_tools`` answers it for ``query`` (empty: no search)."""
    catalog = get_catalog()
    principal = catalog.with_permissions(grant.principal)
    visible = get_auth_backend().can_see
    usable = sum(1 for tool in catalog.tools if discovery.usable(tool, principal, visible))
    preview = DiscoveryPreview(
        mode=discovery.mode_of(principal),
        active=discovery.active(catalog, principal, visible),
        usable=usable,
        entry=[tool.name for tool in discovery.entry_set(catalog, principal, visible)],
        query=query[:200],
    )
    if preview.query.strip():
        found = discovery.search(catalog, principal, visible, preview.query, limit, exclude=discovery.NAMES)
        preview.found = [discovery.hit(tool) for tool in found.tools]
        preview.more = found.more
    return preview
