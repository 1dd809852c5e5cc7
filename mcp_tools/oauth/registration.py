"""Client registration (RFC 7591) and its management (RFC 7592) under one policy.

DOT's views do the storing; every body that creates or changes an application passes
``police`` first, so ``PUT o/register/<client_id>/`` with the registration access token
cannot store what ``POST o/register/`` refuses (issue 32: an http redirect to any host, the
client-credentials, password, implicit or device grants):

- redirect URIs: https, http on a loopback host, or a scheme in ``PRIVATE_REDIRECT_SCHEMES``;
  URIs outside that are dropped (RFC 7591 section 3.2.1 lets the server replace values, and the
  answer lists what was registered), and a request left with none is refused;
- grants: ``authorization_code`` and ``refresh_token`` only; response type ``code``;
- ``token_endpoint_auth_method``: one the AS metadata advertises, answered as registered
  (DOT answers ``client_secret_basic`` for every confidential client);
- a per-IP rate limit on registrations (``REGISTRATION_RATE_LIMIT``).

A client ID metadata document (CIMD) passes the same redirect and grant rules when it is
fetched (``PolicedMetadataFetcher``, DOT's ``CIMD_METADATA_FETCHER`` in the MCP-ready settings).

A client never picks its ``client_id``: DOT generates it (DCR), or it is the URL of the
client's metadata document (CIMD). Only the admin names a client id.
"""

from __future__ import annotations

import ipaddress
from typing import Any
from urllib.parse import urlsplit

import orjson
from django.http import HttpRequest, HttpResponse, JsonResponse
from oauth2_provider.cimd import CIMDError, SafeMetadataFetcher
from oauth2_provider.views import DynamicClientRegistrationManagementView, DynamicClientRegistrationView

from .. import ratelimit
from ..conf import mcp_settings

__all__ = [
    "PolicedMetadataFetcher",
    "is_loopback",
    "manage",
    "register",
]

LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
REGISTRABLE_GRANTS = ("authorization_code", "refresh_token")
# What DOT's registration view can store (it maps "none" to a public client).
DOT_AUTH_METHODS = ("none", "client_secret_basic", "client_secret_post")
MAX_REDIRECT_URIS = 20


def redirect_allowed(uri: Any) -> bool:
    """Whether a client may register ``uri``: https, http to a loopback host, or a private-use
    scheme the site allows (``PRIVATE_REDIRECT_SCHEMES``); never with a fragment."""
    if not isinstance(uri, str) or len(uri) > 2000:
        return False
    parts = urlsplit(uri)
    if parts.fragment:
        return False
    if parts.scheme == "https":
        return bool(parts.hostname)
    if parts.scheme == "http":
        return is_loopback(parts.hostname or "")
    return bool(parts.scheme) and parts.scheme in mcp_settings.PRIVATE_REDIRECT_SCHEMES


def is_loopback(host: str) -> bool:
    host = host.lower()
    if host in LOOPBACK_HOSTS:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def auth_methods() -> list[str]:
    """The token endpoint auth methods a client may register: those the metadata advertises."""
    from oauth2_provider.settings import oauth2_settings

    advertised = list(oauth2_settings.OAUTH2_TOKEN_ENDPOINT_AUTH_METHODS_SUPPORTED)
    return [m for m in advertised if m in DOT_AUTH_METHODS]


def error(code: str, description: str, status: int = 400) -> JsonResponse:
    return JsonResponse({"error": code, "error_description": description}, status=status)


def police(data: dict[str, Any], *, auth_method: bool = True) -> tuple[str, str] | None:
    """Bring client metadata within the policy, in place: None, or the (error, description) that
    refuses it. ``auth_method``: check ``token_endpoint_auth_method`` too (DCR; DOT holds a
    CIMD client to ``none`` itself)."""
    uris = data.get("redirect_uris")
    if not isinstance(uris, list) or not uris:
        return "invalid_redirect_uri", "redirect_uris must be a non-empty list"
    if len(uris) > MAX_REDIRECT_URIS:
        return "invalid_redirect_uri", f"At most {MAX_REDIRECT_URIS} redirect URIs"
    kept = [uri for uri in uris if redirect_allowed(uri)]
    if not kept:
        schemes = mcp_settings.PRIVATE_REDIRECT_SCHEMES
        return "invalid_redirect_uri", (
            f"Redirect URI {str(uris[0])[:200]!r} must be https or http on a loopback host"
            + (f", or use a scheme among {', '.join(schemes)}" if schemes else "")
        )
    data["redirect_uris"] = list(dict.fromkeys(kept))
    grants = data.get("grant_types", ["authorization_code"])
    if not isinstance(grants, list):
        return "invalid_client_metadata", "grant_types must be a list"
    data["grant_types"] = _registrable_grants(grants)
    if "response_types" in data:
        data["response_types"] = ["code"]
    return _auth_method_refusal(data) if auth_method else None


def _registrable_grants(grants: list[Any]) -> list[Any]:
    """The grants asked for that registration gives, each once; the authorization code always."""
    kept = [g for g in dict.fromkeys(grants) if g in REGISTRABLE_GRANTS]
    if "authorization_code" not in kept:
        kept.insert(0, "authorization_code")
    return kept


def _auth_method_refusal(data: dict[str, Any]) -> tuple[str, str] | None:
    method = data.get("token_endpoint_auth_method", "client_secret_basic")
    allowed = auth_methods()
    if method not in allowed:
        return "invalid_client_metadata", f"token_endpoint_auth_method must be one of {', '.join(allowed)}"
    return None


class PolicedMetadataFetcher(SafeMetadataFetcher):  # type: ignore[misc]
    """DOT's SSRF-hardened fetcher of client ID metadata documents, with the registration
    policy applied to what a document declares (its redirect URIs and grants), so a client
    that names itself by URL gets no more than one that registers."""

    def fetch(self, client_id: str) -> tuple[dict[str, Any], int]:
        metadata, max_age = self.fetch_document(client_id)
        if not isinstance(metadata, dict):
            raise CIMDError("client_id document must be a JSON object")
        refused = police(metadata, auth_method=False)
        if refused is not None:
            raise CIMDError(f"{refused[0]}: {refused[1]}")
        return metadata, max_age

    def fetch_document(self, client_id: str) -> tuple[dict[str, Any], int]:
        """The document and its max-age (override to fetch another way)."""
        found: tuple[dict[str, Any], int] = super().fetch(client_id)
        return found


def _parse(request: HttpRequest) -> dict[str, Any] | JsonResponse:
    try:
        data = orjson.loads(request.body)
    except orjson.JSONDecodeError:
        return error("invalid_client_metadata", "The body must be a JSON object")
    if not isinstance(data, dict):
        return error("invalid_client_metadata", "The body must be a JSON object")
    return data


def _as_registered(response: HttpResponse, data: dict[str, Any]) -> HttpResponse:
    """The answer states the auth method the client registered (DOT says client_secret_basic
    for every confidential client, which clients that asked for client_secret_post refuse)."""
    method = data.get("token_endpoint_auth_method")
    if response.status_code not in (200, 201) or method != "client_secret_post":
        return response
    body = orjson.loads(response.content)
    if body.get("token_endpoint_auth_method") == "client_secret_basic":
        body["token_endpoint_auth_method"] = method
        response.content = orjson.dumps(body)
    return response


def _client_ip(request: HttpRequest) -> str:
    return str(request.META.get("REMOTE_ADDR") or "unknown")


_register_view = DynamicClientRegistrationView.as_view()
_manage_view = DynamicClientRegistrationManagementView.as_view()


def register(request: HttpRequest) -> HttpResponse:
    """RFC 7591 ``POST o/register/``, open to anonymous MCP clients within the policy."""
    if request.method != "POST":
        response: HttpResponse = _register_view(request)
        return response
    rate = ratelimit.parse_rate(mcp_settings.REGISTRATION_RATE_LIMIT)
    if rate is not None:
        retry = ratelimit.hit(f"dcr\0{_client_ip(request)}", rate)
        if retry is not None:
            response = error("slow_down", "Too many client registrations; try again later", 429)
            response["Retry-After"] = str(int(retry))
            return response
    data = _parse(request)
    if isinstance(data, JsonResponse):
        return data
    refused = police(data)
    if refused is not None:
        return error(*refused)
    request._body = orjson.dumps(data)  # DOT reads the policed body
    return _as_registered(_register_view(request), data)


def manage(request: HttpRequest, client_id: str) -> HttpResponse:
    """RFC 7592 ``GET/PUT/DELETE o/register/<client_id>/`` with the registration access token;
    a ``PUT`` passes the same policy as a registration."""
    data: dict[str, Any] = {}
    if request.method == "PUT":
        parsed = _parse(request)
        if isinstance(parsed, JsonResponse):
            return parsed
        refused = police(parsed)
        if refused is not None:
            return error(*refused)
        data = parsed
        request._body = orjson.dumps(data)
    return _as_registered(_manage_view(request, client_id=client_id), data)
