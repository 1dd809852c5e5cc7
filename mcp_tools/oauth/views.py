"""What MCP clients need around DOT's views: PRM, CORS, a DCR policy, a consent page with hosts."""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import orjson
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from oauth2_provider.views import (
    AuthorizationView,
    DynamicClientRegistrationView,
    OAuthServerMetadataView,
    RevokeTokenView,
    TokenView,
)

from .. import ratelimit
from ..auth.oauth import advertised_scopes, authorization_servers, entitled, resource_url
from ..catalog import get_catalog
from ..conf import mcp_settings

CORS_HEADERS = "authorization, content-type, mcp-protocol-version"
LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
REGISTRABLE_GRANTS = ("authorization_code", "refresh_token")

View = Callable[..., HttpResponse]


def _cors(response: HttpResponse, methods: str) -> HttpResponse:
    # Public endpoints: any origin, never credentials (PKCE protects the code).
    response["Access-Control-Allow-Origin"] = "*"
    response["Access-Control-Allow-Methods"] = methods
    response["Access-Control-Allow-Headers"] = CORS_HEADERS
    response["Access-Control-Expose-Headers"] = "WWW-Authenticate"
    response["Access-Control-Max-Age"] = str(mcp_settings.CORS_MAX_AGE)
    return response


def with_cors(view: View, methods: str) -> View:
    """Answer preflights and add CORS headers to ``view``'s responses (note §2 gap 6)."""

    @csrf_exempt
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if request.method == "OPTIONS":
            return _cors(HttpResponse(status=204), methods)
        response: HttpResponse = view(request, *args, **kwargs)
        return _cors(response, methods)

    wrapped.login_required = False  # type: ignore[attr-defined]
    return wrapped


def protected_resource_metadata(request: HttpRequest, resource_path: str | None = None) -> HttpResponse:
    """RFC 9728 (A-1, A-2): at the root and at the path of RESOURCE_URL; ``resource`` is
    RESOURCE_URL exactly, never derived from the request."""
    if resource_path is not None and "/" + resource_path.strip("/") != urlsplit(resource_url()).path:
        return JsonResponse({"error": "not_found"}, status=404)
    if request.method not in ("GET", "HEAD"):
        return JsonResponse({"error": "method_not_allowed"}, status=405, headers={"Allow": "GET, HEAD, OPTIONS"})
    data: dict[str, Any] = {
        "resource": resource_url(),
        "authorization_servers": authorization_servers(),
        "scopes_supported": advertised_scopes(get_catalog()),
        "bearer_methods_supported": ["header"],
    }
    if mcp_settings.RESOURCE_NAME:
        data["resource_name"] = mcp_settings.RESOURCE_NAME
    return JsonResponse(data)


# --------------------------------------------------------------------------- DCR


def _redirect_allowed(uri: Any) -> bool:
    if not isinstance(uri, str):
        return False
    parts = urlsplit(uri)
    if parts.fragment:
        return False
    if parts.scheme == "https":
        return bool(parts.hostname)
    if parts.scheme == "http":
        host = (parts.hostname or "").lower()
        if host in LOOPBACK_HOSTS:
            return True
        try:
            return ipaddress.ip_address(host).is_loopback
        except ValueError:
            return False
    return parts.scheme in mcp_settings.PRIVATE_REDIRECT_SCHEMES


def _client_ip(request: HttpRequest) -> str:
    return str(request.META.get("REMOTE_ADDR") or "unknown")


def _dcr_error(error: str, description: str, status: int = 400) -> JsonResponse:
    return JsonResponse({"error": error, "error_description": description}, status=status)


_dcr_view = DynamicClientRegistrationView.as_view()


def register(request: HttpRequest) -> HttpResponse:
    """RFC 7591 registration, open to anonymous MCP clients with safeguards:
    http redirects only to loopback hosts, a per-IP rate limit, and only the
    authorization_code (+ refresh_token) grant."""
    if request.method != "POST":
        response: HttpResponse = _dcr_view(request)
        return response
    rate = ratelimit.parse_rate(mcp_settings.REGISTRATION_RATE_LIMIT)
    if rate is not None:
        retry = ratelimit.hit(f"dcr\0{_client_ip(request)}", rate)
        if retry is not None:
            response = _dcr_error("slow_down", "Too many client registrations; try again later", 429)
            response["Retry-After"] = str(int(retry))
            return response
    try:
        data = orjson.loads(request.body)
    except orjson.JSONDecodeError:
        return _dcr_error("invalid_client_metadata", "The body must be a JSON object")
    if not isinstance(data, dict):
        return _dcr_error("invalid_client_metadata", "The body must be a JSON object")
    uris = data.get("redirect_uris")
    if not isinstance(uris, list) or not uris:
        return _dcr_error("invalid_redirect_uri", "redirect_uris must be a non-empty list")
    for uri in uris:
        if not _redirect_allowed(uri):
            return _dcr_error(
                "invalid_redirect_uri", f"Redirect URI {str(uri)[:200]!r} must be https or http on a loopback host"
            )
    grants = data.get("grant_types")
    if isinstance(grants, list):
        kept = [g for g in grants if g in REGISTRABLE_GRANTS]
        data["grant_types"] = kept or ["authorization_code"]
    response_types = data.get("response_types")
    if isinstance(response_types, list):
        data["response_types"] = ["code"]
    request._body = orjson.dumps(data)  # DOT reads the (now policed) body
    registered: HttpResponse = _dcr_view(request)
    return registered


# --------------------------------------------------------------------------- consent


class ConsentView(AuthorizationView):  # type: ignore[misc]
    """DOT's authorize view; the page shows the client, its redirect host and the scopes
    (A-S4), and only scopes the user is entitled to are granted."""

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context: dict[str, Any] = super().get_context_data(**kwargs)
        redirect_uri = str(context.get("redirect_uri") or "")
        parts = urlsplit(redirect_uri)
        host = (parts.hostname or "").lower()
        context["redirect_host"] = host or parts.scheme
        context["redirect_is_loopback"] = parts.scheme == "http" and _redirect_allowed(redirect_uri)
        client_id = str(context.get("client_id") or "")
        context["client_id_host"] = urlsplit(client_id).hostname if client_id.startswith("https://") else ""
        descriptions = get_catalog().scopes.descriptions
        context["scope_rows"] = [(name, descriptions.get(name) or name) for name in context.get("scopes") or ()]
        return context

    def form_valid(self, form: Any) -> HttpResponse:
        scopes = str(form.cleaned_data.get("scope") or "").split()
        granted = entitled(self.request.user, scopes)
        if scopes and not granted:
            form.cleaned_data["allow"] = False
        form.cleaned_data["scope"] = " ".join(granted)
        response: HttpResponse = super().form_valid(form)
        return response


token = with_cors(TokenView.as_view(), "POST, OPTIONS")
revoke = with_cors(RevokeTokenView.as_view(), "POST, OPTIONS")
dcr_register = with_cors(register, "POST, OPTIONS")
server_metadata = with_cors(OAuthServerMetadataView.as_view(), "GET, OPTIONS")
resource_metadata = with_cors(protected_resource_metadata, "GET, OPTIONS")
