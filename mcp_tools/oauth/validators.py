"""The OAuth2 validator for MCP: every grant and token is bound to RESOURCE_URL (RFC 8707).

- no ``resource`` on authorize or token: the grant gets ``[RESOURCE_URL]`` (clients such as
  Claude Code omit it), so unbound tokens are never issued;
- a ``resource`` is canonicalised (A-8: case of scheme and host, default port, trailing
  slash), and anything other than RESOURCE_URL is ``invalid_target``;
- requested scopes DOT does not know (``openid profile email`` from clients that guess) are
  dropped instead of failing the flow; nothing known left means the default scopes.
"""

from __future__ import annotations

from typing import Any

from oauth2_provider.oauth2_validators import OAuth2Validator
from oauth2_provider.scopes import get_scopes_backend
from oauthlib.oauth2.rfc6749 import errors

from ..auth.oauth import canonical_resource, resource_url


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

    def validate_scopes(
        self, client_id: str, scopes: list[str], client: Any, request: Any, *args: Any, **kwargs: Any
    ) -> bool:
        known = set(get_scopes_backend().get_available_scopes(application=client, request=request))
        kept = [s for s in scopes if s in known]
        if not kept:
            kept = list(get_scopes_backend().get_default_scopes(application=client, request=request))
        scopes[:] = kept
        request.scopes = kept
        return True
