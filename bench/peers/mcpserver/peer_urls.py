"""django-mcp-server peer URLs: its own urls module, as its README says."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.urls import include, path


def home(request: HttpRequest) -> HttpResponse:
    return HttpResponse(b"ok", content_type="text/plain")


urlpatterns = [path("", home), path("", include("mcp_server.urls"))]
