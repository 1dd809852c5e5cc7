"""URLconf for ``path("mcp", include("mcp_tools.urls"))``: the endpoint, no trailing slash."""

from django.urls import path

from .transport import views

__all__: list[str] = []

app_name = "mcp_tools"

urlpatterns = [
    path("", views.endpoint, name="endpoint"),
]
