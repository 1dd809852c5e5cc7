"""Demo URLs: the admin, a home page and the MCP endpoint at /mcp."""

from django.contrib import admin
from django.urls import include, path
from django.views.generic import TemplateView

urlpatterns = [
    path("", TemplateView.as_view(template_name="home.html"), name="home"),
    path("admin/", admin.site.urls),
    path("mcp", include("mcp_tools.urls")),
]
