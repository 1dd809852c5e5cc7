"""Include at the site root, before nothing else claims these paths::

    path("", include("mcp_tools.oauth.urls")),
    path("mcp", include("mcp_tools.urls")),

Serves PRM (root and path forms), RFC 8414 metadata at the root, and DOT under ``o/`` with
the MCP wrappers (consent page, CORS on token/revoke/register, the DCR policy) in front.
"""

from django.urls import include, path

from . import views

urlpatterns = [
    path(".well-known/oauth-protected-resource", views.resource_metadata, name="mcp-oauth-prm"),
    path(
        ".well-known/oauth-protected-resource/<path:resource_path>", views.resource_metadata, name="mcp-oauth-prm-path"
    ),
    path(".well-known/oauth-authorization-server", views.server_metadata, name="mcp-oauth-as-metadata"),
    path("o/authorize/", views.ConsentView.as_view(), name="mcp-oauth-authorize"),
    path("o/token/", views.token, name="mcp-oauth-token"),
    path("o/revoke_token/", views.revoke, name="mcp-oauth-revoke"),
    path("o/register/", views.dcr_register, name="mcp-oauth-register"),
    path("o/", include("oauth2_provider.urls")),
]
