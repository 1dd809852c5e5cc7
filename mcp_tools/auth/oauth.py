"""OAuth resource-server backends: tokens from django-oauth-toolkit, or JWTs of an external AS.

Both read the token from ``Authorization: Bearer`` only (A-9), check that it was issued for
``MCP_TOOLS["RESOURCE_URL"]`` (A-6, RFC 8707; never compared with the request URL), and
answer failures with the RFC 6750 / RFC 9728 challenge (A-2..A-5). They put the token's
scopes on ``Principal.granted`` and leave ``scopes`` unset: the request expands them once,
against the catalog it uses (``Catalog.scoped``: active scopes plus those they imply).
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from functools import lru_cache
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from django.core.exceptions import ImproperlyConfigured

from ..types import Principal, ToolInfo, grant_key
from . import tokens
from .base import AuthFailure, BaseAuthBackend

if TYPE_CHECKING:
    from django.http import HttpRequest

    from ..catalog import Catalog

__all__ = [
    "DOTBackend",
    "JWTBackend",
    "OAuthBackend",
    "advertised_scopes",
    "authorization_servers",
    "canonical_resource",
    "grantable_scopes",
    "open_door",
    "resource_url",
    "scopes_enforced",
]

NOT_VALID = "The access token is not valid for this resource"


# --------------------------------------------------------------------------- URLs


@lru_cache(maxsize=256)
def canonical_resource(url: str) -> str:
    """A-8: lowercase scheme and host, no default port, no fragment or query, no trailing slash.

    Pure, and read on every authenticated request (each token's resources): memoized."""
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    port = parts.port
    netloc = host if port is None or (scheme, port) in (("http", 80), ("https", 443)) else f"{host}:{port}"
    return urlunsplit((scheme, netloc, parts.path.rstrip("/"), "", ""))


def resource_url() -> str:
    from ..conf import mcp_settings

    value = mcp_settings.RESOURCE_URL
    if not value:
        raise ImproperlyConfigured('MCP_TOOLS["RESOURCE_URL"] must be set to use an OAuth backend')
    return canonical_resource(str(value))


def resource_origin() -> str:
    parts = urlsplit(resource_url())
    return f"{parts.scheme}://{parts.netloc}"


def resource_metadata_url() -> str:
    """RFC 9728 §3.1: the well-known URL with the resource's path appended."""
    parts = urlsplit(resource_url())
    return f"{parts.scheme}://{parts.netloc}/.well-known/oauth-protected-resource{parts.path}"


def authorization_servers() -> list[str]:
    from ..conf import mcp_settings

    return list(mcp_settings.AUTHORIZATION_SERVERS) or [resource_origin()]


def advertised_scopes(catalog: Catalog) -> list[str]:
    """The scopes for PRM ``scopes_supported`` and the 401 ``scope``: see SCOPE_ADVERTISING."""
    from ..conf import mcp_settings

    mode = mcp_settings.SCOPE_ADVERTISING
    cache: dict[str, list[str]] = catalog.__dict__.setdefault("_advertised_scopes", {})
    if mode not in cache:
        active = catalog.scopes.closure
        if mode == "progressive":
            names = set(catalog.scopes.advertised)
        else:
            names = {s for tool in catalog.tools for s in tool.required_scopes if s in active}
        cache[mode] = sorted(names)  # computed once per catalog version
    return list(cache[mode])


def _quote(value: str) -> str:
    value = value.replace("\r", "").replace("\n", "")
    return value.replace("\\", "\\\\").replace('"', '\\"')


def challenge(status: int, error: str | None, description: str, scopes: list[str] | None = None) -> AuthFailure:
    """An AuthFailure carrying the RFC 6750 challenge with resource_metadata and scope (4.5)."""
    params: list[tuple[str, str]] = []
    if error:
        params.append(("error", error))
        params.append(("error_description", description))
    params.append(("resource_metadata", resource_metadata_url()))
    if scopes:
        params.append(("scope", " ".join(scopes)))
    header = "Bearer " + ", ".join(f'{k}="{_quote(v)}"' for k, v in params)
    return AuthFailure(status, error or "invalid_token", description, {"WWW-Authenticate": header}, scopes)


def _default_scopes() -> list[str]:
    from ..catalog import get_catalog

    return advertised_scopes(get_catalog())


def unauthorized(error: str | None, description: str) -> AuthFailure:
    return challenge(401, error, description, _default_scopes())


def bearer_token(request: HttpRequest) -> str:
    """A-9: the token comes from the Authorization header only."""
    if "access_token" in request.META.get("QUERY_STRING", "") and "access_token" in request.GET:
        raise challenge(400, "invalid_request", "Send the access token in the Authorization header", _default_scopes())
    header: str | None = request.META.get("HTTP_AUTHORIZATION")
    if not header:
        raise unauthorized(None, "Authentication required")
    scheme, _, token = header.partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token or " " in token:
        raise unauthorized("invalid_token", "Use Authorization: Bearer <access token>")
    return token


# --------------------------------------------------------------------------- base


class OAuthBackend(BaseAuthBackend):
    """Shared parts: step-up for tools/call."""

    def step_up(self, tool: ToolInfo, principal: Principal) -> AuthFailure | None:
        """A-5: 403 insufficient_scope when the user could be granted what the tool lacks.

        Tools needing a scope the user can never get answer like unknown tools (-32602).
        """
        if principal.user is None or principal.scopes is None:
            return None
        missing = tool.required_scopes - principal.scopes
        if not missing or set(grantable_scopes(principal.user, sorted(missing))) != missing:
            return None
        # 2025-11-25: the 403 scope also lists what the client already holds (as granted, not
        # expanded), so a client that replaces rather than unions its scopes keeps them.
        needed = sorted(tool.required_scopes | (principal.granted or frozenset()))
        lacking = sorted(missing)
        description = (
            f"Tool '{tool.name}' requires the scope{'s' if len(tool.required_scopes) > 1 else ''} "
            f"{' '.join(sorted(tool.required_scopes))}; this token lacks {' '.join(lacking)}"
        )
        return challenge(403, "insufficient_scope", description, needed)


def scopes_enforced() -> bool:
    """Whether the configured backend is an OAuth backend (tokens carry scopes)."""
    from ..conf import mcp_settings

    cls = mcp_settings.AUTH_BACKEND
    return isinstance(cls, type) and issubclass(cls, OAuthBackend)


def open_door(name: str, handler_key: str, enabled: bool, has_scope: bool) -> str:
    """A warning for an enabled tool of a kind that reaches into the site (``needs_scope``:
    ``drf.view``, ``celery.task``) with no required scope while an OAuth backend is on: every
    token may call it. "" when there is nothing to say."""
    from ..registry import registry

    kind = registry.get(handler_key) if enabled and not has_scope else None
    if kind is None or not kind.needs_scope or not scopes_enforced():
        return ""
    return (
        f"Tool {name!r} ({handler_key}) is enabled with no required scope: every OAuth token, whatever its "
        "scopes, may call it."
    )


def token_principal(
    subject: str, client_id: str | None, granted: set[str], user: Any = None, user_id: Any = None
) -> Principal:
    """The caller of a token, with its scopes as granted (``Catalog.scoped`` expands them).

    Its key is the grant's (``subject`` and the client the token was issued to): what one
    application's token creates, another application's token of the same user cannot reach."""
    return Principal(
        grant_key(subject, client_id), user, client_id, granted=frozenset(granted), user_id=user_id, subject=subject
    )


def grantable_scopes(user: Any, names: list[str]) -> list[str]:
    """The scopes among ``names`` that ``user`` may be granted: active, and not restricted to
    groups the user is not in. Used by the consent page, step-up and mcp_token (one query)."""
    from django.db.models import Q

    from ..models import Scope

    if not names:
        return []
    kept = set(
        Scope.objects.filter(Q(groups=None) | Q(groups__user=user), name__in=names, active=True)
        .values_list("name", flat=True)
        .distinct()
    )
    return [n for n in names if n in kept]


# --------------------------------------------------------------------------- DOT


class DOTBackend(OAuthBackend):
    """Access tokens issued by django-oauth-toolkit on this site (one indexed query per request).

    Refused with 401: unknown or revoked tokens, expired ones, DCR registration tokens,
    tokens without a ``resource`` or bound to another resource, tokens of inactive users,
    and client-credentials tokens unless ``ALLOW_CLIENT_CREDENTIALS`` and the application has a
    ``ClientEntitlement`` (whose scopes bound the token's: one more query for such tokens).

    The token, its client id and its user's id and active flag come from one plain SQL JOIN on
    the indexed token checksum, written once from the models' metadata: compiling the ORM query
    cost more than running it (about 1-2 ms a request). Nothing is cached by default, so a
    revoked or expired token is refused at once by every process; ``TOKEN_CACHE_SECONDS`` lets a
    process reuse a row for a bounded time (``auth.tokens``). The user is loaded on first use only.
    """

    in_process = True  # its database, and nothing else (its token rows' cache included)

    def __init__(self) -> None:
        from oauth2_provider.models import get_access_token_model
        from oauth2_provider.settings import oauth2_settings

        self.model = get_access_token_model()
        self.registration_scope = oauth2_settings.DCR_REGISTRATION_SCOPE
        self._sql: dict[str, str] = {}

    def _lookup_sql(self, connection: Any) -> str:
        """SELECT expires, scope, resource, client_id, user id, is_active for one checksum."""
        found = self._sql.get(connection.alias)
        if found is None:
            q = connection.ops.quote_name
            meta = self.model._meta
            app = meta.get_field("application").related_model._meta
            user = meta.get_field("user").related_model._meta
            t, a, u = q(meta.db_table), q(app.db_table), q(user.db_table)
            column = meta.get_field
            found = (
                f"SELECT t.{q(column('expires').column)}, t.{q(column('scope').column)}, "  # noqa: S608 - names from _meta
                f"t.{q(column('resource').column)}, a.{q(app.get_field('client_id').column)}, "
                f"u.{q(user.pk.column)}, u.{q(user.get_field('is_active').column)} "
                f"FROM {t} t LEFT JOIN {a} a ON a.{q(app.pk.column)} = t.{q(column('application').column)} "
                f"LEFT JOIN {u} u ON u.{q(user.pk.column)} = t.{q(column('user').column)} "
                f"WHERE t.{q(column('token_checksum').column)} = %s"
            )
            self._sql[connection.alias] = found
        return found

    def authenticate(self, request: HttpRequest) -> Principal:
        from django.contrib.auth import get_user_model
        from django.db import connections, router
        from django.utils import timezone
        from django.utils.functional import SimpleLazyObject

        from ..conf import mcp_settings
        from ..models.raw import fetch_one

        raw = bearer_token(request)
        checksum = hashlib.sha256(raw.encode("utf-8")).hexdigest()
        connection = connections[router.db_for_read(self.model)]
        row = tokens.lookup(checksum, lambda: fetch_one(connection, self._lookup_sql(connection), [checksum]), 4)
        if row is None:
            raise unauthorized("invalid_token", NOT_VALID)
        expires = _aware(row[0])
        if expires <= timezone.now():
            raise unauthorized("invalid_token", "The access token expired")
        granted = set((row[1] or "").split())
        if self.registration_scope in granted:
            raise unauthorized("invalid_token", "A client registration token is not an access token")
        audiences = _audiences(row[2])
        if not audiences:
            raise unauthorized("invalid_token", "The access token is not bound to this resource (RFC 8707)")
        if resource_url() not in audiences:
            raise unauthorized("invalid_token", NOT_VALID)
        client_id, user_id, active = row[3], row[4], row[5]
        if user_id is None:
            if not mcp_settings.ALLOW_CLIENT_CREDENTIALS or client_id is None:
                raise unauthorized("invalid_token", NOT_VALID)
            # No person consented: the token holds only what an admin entitles the application
            # to now (a token issued before the entitlement narrowed loses the rest at once).
            from ..models import ClientEntitlement

            entitled = ClientEntitlement.scopes_of(str(client_id), using=connection.alias)
            if entitled is None:
                raise unauthorized("invalid_token", NOT_VALID)
            return token_principal(f"client:{client_id}", client_id, granted & entitled)
        if not active:
            raise unauthorized("invalid_token", NOT_VALID)
        users = get_user_model()._default_manager
        user = SimpleLazyObject(lambda: users.get(pk=user_id))
        return token_principal(f"user:{user_id}", client_id, granted, user, user_id)


def _aware(value: Any) -> datetime:
    """A token's expiry as an aware datetime (SQLite gives it as text, in UTC when USE_TZ)."""
    found: datetime | None = _parse_stored(value) if isinstance(value, str) else value
    if found is None:
        return datetime.min.replace(tzinfo=UTC)
    if found.tzinfo is None:
        return found.replace(tzinfo=UTC)
    return found


@lru_cache(maxsize=1024)
def _parse_stored(text: str) -> datetime | None:
    from django.utils.dateparse import parse_datetime

    return parse_datetime(text)


@lru_cache(maxsize=1024)
def _audiences_of(stored: str | bytes) -> tuple[str, ...]:
    try:
        resource = json.loads(stored)
    except ValueError:
        return ()
    return (
        tuple(canonical_resource(r) for r in resource or () if isinstance(r, str)) if isinstance(resource, list) else ()
    )


def _audiences(stored: Any) -> tuple[str, ...]:
    """The canonical resources a token was issued for (DOT stores a JSON list)."""
    if isinstance(stored, str | bytes):
        return _audiences_of(stored)
    if isinstance(stored, list):
        return tuple(canonical_resource(r) for r in stored if isinstance(r, str))
    return ()


# --------------------------------------------------------------------------- JWT


class JWTBackend(OAuthBackend):
    """JWT access tokens of an external authorization server (Keycloak, Auth0, ...).

    ``MCP_TOOLS["JWT"]``: ``issuer`` (exact ``iss``), ``jwks_uri`` (keys, cached, refetched
    on an unknown ``kid``), ``audiences`` (default ``[RESOURCE_URL]``; ``aud`` must name
    one), ``algorithms`` (default RS256/ES256), ``scope_claim`` (default ``scope``; a
    space-separated string or a list, ``scp`` is read too), ``user_claim`` (default
    ``sub``), ``user_field`` (resolve a local user whose field equals the claim; empty: no
    local user, principal key ``sub:<value>``), ``leeway`` seconds, ``jwks_cache_seconds``.
    """

    def __init__(self) -> None:
        import jwt

        from ..conf import mcp_settings

        config: dict[str, Any] = dict(mcp_settings.JWT)
        for key in ("issuer", "jwks_uri"):
            if not config.get(key):
                raise ImproperlyConfigured(f'MCP_TOOLS["JWT"]["{key}"] is required by JWTBackend')
        self.issuer = str(config["issuer"])
        self.audiences = [canonical_resource(a) for a in config.get("audiences") or [resource_url()]]
        self.algorithms = list(config.get("algorithms") or ["RS256", "ES256"])
        self.scope_claim = str(config.get("scope_claim") or "scope")
        self.user_claim = str(config.get("user_claim") or "sub")
        self.user_field = str(config.get("user_field") or "")
        self.leeway = float(config.get("leeway", 30))
        # PyJWKClient caches the whole key set for ``lifespan`` and locks its own fetches. No
        # per-key cache (cache_keys): it has no expiry, so a key the identity provider removed
        # would stay trusted for the life of the process.
        self.jwks = jwt.PyJWKClient(
            str(config["jwks_uri"]),
            lifespan=int(config.get("jwks_cache_seconds", 300)),
            timeout=int(config.get("jwks_timeout", 5)),
        )

    def authenticate(self, request: HttpRequest) -> Principal:
        import jwt

        raw = bearer_token(request)
        try:
            key = self.jwks.get_signing_key_from_jwt(raw)
            claims = jwt.decode(
                raw,
                key.key,
                algorithms=self.algorithms,
                issuer=self.issuer,
                options={"require": ["exp", "iss", "aud"], "verify_aud": False},
                leeway=self.leeway,
            )
        except jwt.ExpiredSignatureError as exc:
            raise unauthorized("invalid_token", "The access token expired") from exc
        except (jwt.PyJWTError, ValueError) as exc:
            raise unauthorized("invalid_token", NOT_VALID) from exc
        aud = claims.get("aud")
        audiences = [aud] if isinstance(aud, str) else aud if isinstance(aud, list) else []
        if not {canonical_resource(a) for a in audiences if isinstance(a, str)} & set(self.audiences):
            raise unauthorized("invalid_token", NOT_VALID)
        granted = _claim_scopes(claims.get(self.scope_claim)) | _claim_scopes(claims.get("scp"))
        subject = claims.get(self.user_claim)
        if not isinstance(subject, str) or not subject:
            raise unauthorized("invalid_token", NOT_VALID)
        client_id = claims.get("client_id") or claims.get("azp")
        client_id = client_id if isinstance(client_id, str) else None
        if not self.user_field:
            return token_principal(f"sub:{subject}", client_id, granted)
        from django.contrib.auth import get_user_model

        user = get_user_model()._default_manager.filter(**{self.user_field: subject}).first()
        if user is None or not user.is_active:
            raise unauthorized("invalid_token", NOT_VALID)
        return token_principal(f"user:{user.pk}", client_id, granted, user)


def _claim_scopes(value: Any) -> set[str]:
    if isinstance(value, str):
        return set(value.split())
    if isinstance(value, list):
        return {v for v in value if isinstance(v, str)}
    return set()
