"""What MCP clients need around DOT's views: PRM, CORS, the AS metadata as served, sign-in, and a
consent page that names the client and where it sends the user."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import orjson
from django.contrib.auth.views import LoginView
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.csrf import csrf_exempt
from oauth2_provider.views import AuthorizationView, OAuthServerMetadataView, RevokeTokenView, TokenView
from oauthlib.oauth2.rfc6749 import errors as oauth_errors

from ..auth.oauth import advertised_scopes, authorization_servers, grantable_scopes, resource_url
from ..auth.signin import sign_in_url
from ..catalog import get_catalog
from ..conf import mcp_settings
from . import registration
from .validators import grant_types_served

__all__ = [
    "ConsentView",
    "SignInView",
    "dcr_manage",
    "dcr_register",
    "resource_metadata",
    "revoke",
    "server_metadata",
    "token",
]

CORS_HEADERS = "authorization, content-type, mcp-protocol-version"
CONSENT_TEMPLATE = "mcp_tools/oauth/authorize.html"
ERROR_TEMPLATE = "mcp_tools/oauth/error.html"
SIGN_IN_TEMPLATE = "mcp_tools/oauth/login.html"

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


# --------------------------------------------------------------------------- AS metadata

_dot_metadata = OAuthServerMetadataView.as_view()


def authorization_server_metadata(request: HttpRequest) -> HttpResponse:
    """RFC 8414 as DOT builds it, stating what this server actually serves: the grants the
    validator accepts (no implicit, password or device code; client credentials only when
    ``ALLOW_CLIENT_CREDENTIALS``), response type ``code``, and ``none`` among the token
    endpoint's auth methods while client ID metadata documents are on (a CIMD client is public
    by definition; Claude uses CIMD only when both are advertised)."""
    response: HttpResponse = _dot_metadata(request)
    if response.status_code != 200:
        return response
    from oauth2_provider.settings import oauth2_settings

    data = orjson.loads(response.content)
    served = grant_types_served()
    data["grant_types_supported"] = [g for g in data.get("grant_types_supported", ()) if g in served]
    data["response_types_supported"] = ["code"]
    methods = list(data.get("token_endpoint_auth_methods_supported") or ())
    if oauth2_settings.CIMD_ENABLED and "none" not in methods:
        data["token_endpoint_auth_methods_supported"] = ["none", *methods]
    response.content = orjson.dumps(data)
    return response


# --------------------------------------------------------------------------- sign-in


class SignInView(LoginView):
    """Django's sign-in view with the package's page (``mcp_tools/oauth/login.html``)."""

    template_name = SIGN_IN_TEMPLATE


# --------------------------------------------------------------------------- consent

SOURCES = {
    "manual": "Registered by this site's administrators.",
    "dcr": "Registered itself with this site (dynamic client registration); its name is its own claim.",
    "cimd": "Identified by a document it publishes on its own web site.",
}


def _error_page(request: HttpRequest, code: str, title: str, explanation: str, status: int = 400) -> HttpResponse:
    context = {"error_code": code, "title": title, "explanation": explanation}
    return render(request, ERROR_TEMPLATE, context, status=status)


def _explain(error: Any, request: HttpRequest) -> tuple[str, str]:
    """A title and a sentence for a person, from an OAuth error that cannot go back to the client."""
    if isinstance(
        error,
        oauth_errors.MismatchingRedirectURIError
        | oauth_errors.InvalidRedirectURIError
        | oauth_errors.MissingRedirectURIError,
    ):
        host = urlsplit(str(request.GET.get("redirect_uri") or request.POST.get("redirect_uri") or "")).hostname
        where = f" ({host})" if host else ""
        return (
            "The application asked to send you to an address it did not register",
            f"It asked to return you to{where} an address this site does not know for it, so nothing was "
            "sent there. Tell the application's developer; if you started the connection yourself, start it again.",
        )
    if isinstance(error, oauth_errors.InvalidClientIdError | oauth_errors.MissingClientIdError):
        return (
            "This site does not know the application",
            "The application's client id is not registered here. If it names itself by a web address (a client "
            "ID metadata document), this site could not fetch or accept that document. Connect again from the "
            "application; if it keeps failing, tell the site's administrators.",
        )
    return ("The application's request could not be accepted", str(getattr(error, "description", "") or ""))


class ConsentView(AuthorizationView):  # type: ignore[misc]
    """DOT's authorize view with the package's consent page (``mcp_tools/oauth/authorize.html``):
    the client's name and how it was registered, the host of its metadata document (CIMD), the
    host it sends the user to, a warning for loopback redirects, and each scope with its
    description (A-S4). Only scopes the user is entitled to are granted, the user is asked on
    every connection (a client cannot skip the page with ``approval_prompt=auto``), and an
    error that cannot go back to the client is a page that says what happened (400), never a 500."""

    template_name = CONSENT_TEMPLATE

    def get_login_url(self) -> str:
        return sign_in_url()

    def get(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if "approval_prompt" in request.GET:
            query = request.GET.copy()
            del query["approval_prompt"]
            request.GET = query  # type: ignore[assignment]
        response: HttpResponse = super().get(request, *args, **kwargs)
        return response

    def error_response(self, error: Any, application: Any, **kwargs: Any) -> HttpResponse:
        from oauth2_provider.views.mixins import OAuthLibMixin

        redirect, details = OAuthLibMixin.error_response(self, error, **kwargs)
        if redirect:
            response: HttpResponse = self.redirect(details["url"], application)
            return response
        oauthlib_error = details["error"]
        title, explanation = _explain(oauthlib_error, self.request)
        code = str(getattr(oauthlib_error, "error", "") or "invalid_request")
        status = int(getattr(oauthlib_error, "status_code", 400) or 400)
        return _error_page(self.request, code, title, explanation, status)

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context: dict[str, Any] = super().get_context_data(**kwargs)
        context.update(_redirect_context(str(context.get("redirect_uri") or "")))
        client_id = str(context.get("client_id") or "")
        context["client_id_host"] = urlsplit(client_id).hostname if client_id.startswith("https://") else ""
        application = context.get("application")
        context["client_name"] = (getattr(application, "name", "") or "").strip() or client_id
        context["client_source"] = SOURCES.get(str(getattr(application, "registration_source", "") or ""), "")
        descriptions = get_catalog().scopes.descriptions
        context["scope_rows"] = [(name, descriptions.get(name) or name) for name in context.get("scopes") or ()]
        return context

    def form_invalid(self, form: Any) -> HttpResponse:
        return _error_page(
            self.request,
            "invalid_request",
            "The consent form was incomplete",
            "Start the connection again from the application.",
        )

    def form_valid(self, form: Any) -> HttpResponse:
        from oauth2_provider.models import get_application_model

        client_id = form.cleaned_data.get("client_id")
        if not get_application_model().objects.filter(client_id=client_id).exists():
            title, explanation = _explain(oauth_errors.InvalidClientIdError(), self.request)
            return _error_page(self.request, "invalid_client", title, explanation)
        scopes = str(form.cleaned_data.get("scope") or "").split()
        granted = grantable_scopes(self.request.user, scopes)
        if scopes and not granted:
            form.cleaned_data["allow"] = False
        form.cleaned_data["scope"] = " ".join(granted)
        response: HttpResponse = super().form_valid(form)
        return response


class McpTokenView(TokenView):  # type: ignore[misc]
    """DOT's token endpoint for the grants the app serves; any other ``grant_type`` is
    ``unsupported_grant_type`` before DOT's own handling (its device-code branch answered a
    request without ``device_code`` with a 500)."""

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        grant_type = request.POST.get("grant_type")
        if grant_type is not None and grant_type not in grant_types_served():
            return JsonResponse(
                {"error": "unsupported_grant_type", "error_description": "This server does not serve that grant"},
                status=400,
                headers={"Cache-Control": "no-store"},
            )
        response: HttpResponse = super().post(request, *args, **kwargs)
        return response


token = with_cors(McpTokenView.as_view(), "POST, OPTIONS")
revoke = with_cors(RevokeTokenView.as_view(), "POST, OPTIONS")
dcr_register = with_cors(registration.register, "POST, OPTIONS")
dcr_manage = with_cors(registration.manage, "GET, PUT, DELETE, OPTIONS")
server_metadata = with_cors(authorization_server_metadata, "GET, OPTIONS")
resource_metadata = with_cors(protected_resource_metadata, "GET, OPTIONS")


def _redirect_context(redirect_uri: str) -> dict[str, Any]:
    """Where the consent page says the browser goes next: the redirect URI's host (its scheme
    for a private-use one), and whether it is this machine."""
    parts = urlsplit(redirect_uri)
    host = (parts.hostname or "").lower()
    return {
        "redirect_host": host or parts.scheme,
        "redirect_is_loopback": parts.scheme == "http" and registration.is_loopback(host),
    }
