"""The OAuth2 validator for MCP: every grant and token is bound to RESOURCE_URL (RFC 8707).

- no ``resource`` on authorize or token: the grant gets ``[RESOURCE_URL]`` (clients such as
  Claude Code omit it), so unbound tokens are never issued;
- a ``resource`` is canonicalised (A-8: case of scheme and host, default port, trailing
  slash), and anything other than RESOURCE_URL is ``invalid_target``;
- requested scopes DOT does not know (``openid profile email`` from clients that guess) are
  dropped instead of failing the flow; nothing known left means the default scopes;
- only the grants the app serves are accepted, whatever an application row says: the
  authorization code (response type ``code``) with its refresh tokens, and client credentials
  when ``ALLOW_CLIENT_CREDENTIALS`` is on. Implicit, password and device-code requests are
  refused (``unauthorized_client``);
- a client-credentials token carries only scopes an admin entitled the application to
  (``ClientEntitlement``); an application without an entitlement gets no such token.
"""

from __future__ import annotations

from typing import Any

from oauth2_provider.oauth2_validators import OAuth2Validator
from oauth2_provider.scopes import get_scopes_backend
from oauthlib.oauth2.rfc6749 import errors

from ..auth.oauth import canonical_resource, resource_url
from ..conf import mcp_settings
from ..models import ClientEntitlement

__all__ = ["McpOAuth2Validator", "grant_types_served"]

USER_GRANTS = ("authorization_code", "refresh_token")
CLIENT_CREDENTIALS = "client_credentials"


def grant_types_served() -> tuple[str, ...]:
    """The token endpoint's grant types: what the metadata advertises and the validator accepts."""
    return USER_GRANTS + ((CLIENT_CREDENTIALS,) if mcp_settings.ALLOW_CLIENT_CREDENTIALS else ())


def bind_resource(request: Any) -> None:
    raw = getattr(request, "resource", None)
    values = raw.split() if isinstance(raw, str) else list(raw or [])
    ours = resource_url()
    bound = []
    for value in values:
        if not isinstance(value, str) or canonical_resource(value) != ours:
            raise errors.CustomOAuth2Error(
                error="invalid_target",
                description=f"This server only issues tokens for {ours}",
                request=request,
            )
        bound.append(ours)
    request.resource = sorted(set(bound)) or [ours]


class McpOAuth2Validator(OAuth2Validator):  # type: ignore[misc]
    def _create_authorization_code(self, request: Any, code: Any, *args: Any, **kwargs: Any) -> Any:
        bind_resource(request)
        return super()._create_authorization_code(request, code, *args, **kwargs)

    def _check_and_set_request_resource(self, request: Any) -> None:
        if getattr(request, "resource", None):
            # Canonicalise first so "…/mcp/" on a refresh matches the grant's "…/mcp".
            bind_resource(request)
        super()._check_and_set_request_resource(request)
        bind_resource(request)

    def validate_grant_type(
        self, client_id: str, grant_type: str, client: Any, request: Any, *args: Any, **kwargs: Any
    ) -> bool:
        if grant_type not in grant_types_served():
            return False
        if grant_type == CLIENT_CREDENTIALS and _client_entitlement(client, request) is None:
            return False
        allowed: bool = super().validate_grant_type(client_id, grant_type, client, request, *args, **kwargs)
        return allowed

    def validate_response_type(
        self, client_id: str, response_type: str, client: Any, request: Any, *args: Any, **kwargs: Any
    ) -> bool:
        if response_type != "code":
            return False
        allowed: bool = super().validate_response_type(client_id, response_type, client, request, *args, **kwargs)
        return allowed

    def get_default_scopes(self, client_id: str, request: Any, *args: Any, **kwargs: Any) -> list[str]:
        if getattr(request, "grant_type", None) == CLIENT_CREDENTIALS:
            return sorted(_client_entitlement(request.client, request) or ())
        found: list[str] = super().get_default_scopes(client_id, request, *args, **kwargs)
        return found

    def validate_scopes(
        self, client_id: str, scopes: list[str], client: Any, request: Any, *args: Any, **kwargs: Any
    ) -> bool:
        if getattr(request, "grant_type", None) == CLIENT_CREDENTIALS:
            # No person consents to a machine's token: it gets what an admin entitled, never
            # "any active scope" (issue 32).
            entitled = _client_entitlement(client, request) or frozenset()
            kept = [s for s in scopes if s in entitled]
            if scopes and not kept:
                return False
            scopes[:] = kept
            request.scopes = kept
            return True
        known = set(get_scopes_backend().get_available_scopes(application=client, request=request))
        kept = [s for s in scopes if s in known]
        if not kept:
            kept = list(get_scopes_backend().get_default_scopes(application=client, request=request))
        scopes[:] = kept
        request.scopes = kept
        return True


def _client_entitlement(client: Any, request: Any) -> frozenset[str] | None:
    """The client's entitlement, read once per token request (one query)."""
    found: frozenset[str] | None
    if hasattr(request, "_mcp_client_entitlement"):
        found = request._mcp_client_entitlement
        return found
    client_id = getattr(client, "client_id", None)
    found = None if not client_id else ClientEntitlement.scopes_of(str(client_id))
    request._mcp_client_entitlement = found
    return found
