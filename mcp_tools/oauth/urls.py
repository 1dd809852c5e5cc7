"""Include at the site root, before nothing else claims these paths::

    path("", include("mcp_tools.oauth.urls")),
    path("mcp", include("mcp_tools.urls")),

Mounts only what an MCP authorization server serves, each behind the app's policy (issue 32):

=========================================  ======================================================
``.well-known/oauth-protected-resource``   RFC 9728 metadata (root and ``/<resource path>``)
``.well-known/oauth-authorization-server`` RFC 8414 metadata, as served (grants, ``none``)
``o/authorize/``                           the consent page (sign-in first), PKCE S256 only
``o/token/``                               code, refresh, client credentials (if allowed)
``o/revoke_token/``                        RFC 7009 revocation
``o/register/``                            RFC 7591 registration under the policy
``o/register/<client_id>/``                RFC 7592 management, under the same policy
``o/login/``                               the package's sign-in page (used when the site's
                                           ``LOGIN_URL`` is not a view of the site)
=========================================  ======================================================

Not mounted: DOT's application and token management pages (``applications/``,
``authorized_tokens/``: a signed-in user could create applications with a client id of their
choice), the device flow, introspection (the endpoint reads tokens itself) and OpenID Connect.
The names DOT reverses (``oauth2_provider:token`` and the rest) are the ones below, so its
metadata lists these endpoints and no other. Do not include ``oauth2_provider.urls`` as well.
"""

from django.urls import include, path

from ..auth.signin import SIGN_IN_URL_NAME
from . import views

__all__: list[str] = []

app_name_dot = "oauth2_provider"

authorization_server = [
    path(".well-known/oauth-authorization-server", views.server_metadata, name="oauth-server-metadata"),
    path("o/authorize/", views.ConsentView.as_view(), name="authorize"),
    path("o/token/", views.token, name="token"),
    path("o/revoke_token/", views.revoke, name="revoke-token"),
    path("o/register/", views.dcr_register, name="dcr-register"),
    path("o/register/<str:client_id>/", views.dcr_manage, name="dcr-register-management"),
]

urlpatterns = [
    path(".well-known/oauth-protected-resource", views.resource_metadata, name="mcp-oauth-prm"),
    path(
        ".well-known/oauth-protected-resource/<path:resource_path>", views.resource_metadata, name="mcp-oauth-prm-path"
    ),
    path("o/login/", views.SignInView.as_view(), name=SIGN_IN_URL_NAME),
    path("", include((authorization_server, app_name_dot))),
]
