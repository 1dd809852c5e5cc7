"""django-mcpz peer URLs: the server object is the view."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.urls import path
from mcpz_server import server


def home(request: HttpRequest) -> HttpResponse:
    return HttpResponse(b"ok", content_type="text/plain")


urlpatterns = [path("", home), path("mcp", server)]
