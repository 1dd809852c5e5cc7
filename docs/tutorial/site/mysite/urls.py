"""The site's URLs: the admin, then the OAuth metadata and the MCP endpoint."""

from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("", include("mcp_tools.oauth.urls")),  # discovery metadata, token, registration
    path("mcp", include("mcp_tools.urls")),  # the endpoint; no trailing slash
]
