"""Demo URLs: the admin, a home page, the OAuth authorization server and the MCP endpoint at /mcp."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from django.views.generic import TemplateView

urlpatterns = [
    path("", TemplateView.as_view(template_name="home.html"), name="home"),
    path("admin/", admin.site.urls),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    # OAuth: PRM, AS metadata, DOT under o/ with the MCP wrappers (consent, CORS, DCR policy).
    path("", include("mcp_tools.oauth.urls")),
    path("mcp", include("mcp_tools.urls")),
]
