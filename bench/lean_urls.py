"""URLs of bench/lean_settings.py: the endpoint at /mcp and a readiness page at /."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.urls import include, path


def ready(request: HttpRequest) -> HttpResponse:
    return HttpResponse(b"ok")


urlpatterns = [path("", ready), path("mcp", include("mcp_tools.urls"))]
