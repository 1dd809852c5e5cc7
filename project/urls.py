"""Demo URLs: the admin, a home page, the OAuth authorization server and the MCP endpoint at /mcp."""

from django.conf import settings
from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import include, path, reverse

from project.library.api import LibraryStats, router

DEFAULT_RESOURCE_URL = "http://127.0.0.1:8000/mcp"


def home(request: HttpRequest) -> HttpResponse:
    """The landing page: the MCP URL, how to connect clients, the OAuth switch, the admin."""
    backend = str(settings.MCP_TOOLS.get("AUTH_BACKEND", ""))
    resource = str(settings.MCP_TOOLS.get("RESOURCE_URL") or "")
    context = {
        # A token's audience is the resource URL of the process that mints it: `manage.py
        # mcp_token` run in another shell needs the same HOST/PORT (or MCP_RESOURCE_URL).
        "resource_url": resource,
        "token_env": "" if resource == DEFAULT_RESOURCE_URL else f"MCP_RESOURCE_URL={resource} ",
        "mcp_url": request.build_absolute_uri(reverse("mcp_tools:endpoint")),
        "origin": f"{request.scheme}://{request.get_host()}",
        "oauth": backend.endswith(("DOTBackend", "JWTBackend")),
        "admin_url": reverse("admin:mcp_tools_tool_changelist"),
    }
    return render(request, "home.html", context)


urlpatterns = [
    path("", home, name="home"),
    path("admin/", admin.site.urls),
    path("api/", include(router.urls)),  # the demo REST API (project/library/api.py)
    path("api/stats/", LibraryStats.as_view(), name="library-stats"),
    # OAuth: PRM, AS metadata, the endpoints under o/ the app serves (consent, sign-in, token, ...).
    path("", include("mcp_tools.oauth.urls")),
    path("mcp", include("mcp_tools.urls")),
]
