"""MCP-ready settings for django-oauth-toolkit, in one line of a site's settings.

``OAUTH2_PROVIDER = oauth2_provider_settings(MCP_TOOLS["RESOURCE_URL"])`` gives DOT what MCP
clients expect of an authorization server on the same site: the issuer is the resource's
origin (so the protected-resource metadata, the AS metadata and ``iss`` agree, check
``mcp_tools.W003``), authorization code with PKCE (S256) only, dynamic client registration and
client ID metadata documents, loopback redirects for desktop clients, refresh tokens that are
rotated, the app's scope backend and validator (scopes from the database, tokens bound to
the resource, only the grants the app serves), and the application admin that edits what a
client-credentials application is entitled to. Any key can be overridden:
``oauth2_provider_settings(url, DCR_ENABLED=False)``.

No import of DOT here: the function only builds a dict, so settings stay cheap to load.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

__all__ = ["MCP_READY", "oauth2_provider_settings"]

MCP_READY: dict[str, Any] = {
    "PKCE_REQUIRED": True,
    "COMPLIANT_BCP_RFC9700_IMPLICIT_GRANT": True,
    "COMPLIANT_BCP_RFC9700_PASSWORD_GRANT": True,
    "COMPLIANT_BCP_RFC9700_PKCE_METHOD": True,
    "COMPLIANT_BCP_RFC9700_AUTHZ_RESPONSE_ISS": True,
    "DCR_ENABLED": True,
    "DCR_REGISTRATION_PERMISSION_CLASSES": ("oauth2_provider.dcr.AllowAllDCRPermission",),
    "CIMD_ENABLED": True,
    # DOT's SSRF-hardened fetcher, with the registration policy on the document's redirects and grants.
    "CIMD_METADATA_FETCHER": "mcp_tools.oauth.registration.PolicedMetadataFetcher",
    "ALLOW_LOCALHOST_LOOPBACK": True,
    "OAUTH2_RESPONSE_TYPES_SUPPORTED": ["code"],
    "OAUTH2_GRANT_TYPES_SUPPORTED": ["authorization_code", "refresh_token", "client_credentials"],
    "OAUTH2_TOKEN_ENDPOINT_AUTH_METHODS_SUPPORTED": ["none", "client_secret_basic", "client_secret_post"],
    "ACCESS_TOKEN_EXPIRE_SECONDS": 3600,
    "REFRESH_TOKEN_EXPIRE_SECONDS": 30 * 86400,
    "REFRESH_TOKEN_REUSE_PROTECTION": True,
    "SCOPES_BACKEND_CLASS": "mcp_tools.oauth.scopes.DatabaseScopes",
    # DOT's application admin plus the scopes of client-credentials applications (their entitlement).
    "APPLICATION_ADMIN_CLASS": "mcp_tools.oauth.admin.ApplicationAdmin",
    "OAUTH2_VALIDATOR_CLASS": "mcp_tools.oauth.validators.McpOAuth2Validator",
}


def oauth2_provider_settings(resource_url: str, **overrides: Any) -> dict[str, Any]:
    """DOT's ``OAUTH2_PROVIDER`` for the MCP endpoint at ``resource_url``, with ``overrides``."""
    parts = urlsplit(resource_url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"resource_url must be the endpoint's absolute URL, not {resource_url!r}")
    settings = {**MCP_READY, "OIDC_ISS_ENDPOINT": f"{parts.scheme}://{parts.netloc}".lower()}
    settings.update(overrides)
    return settings
