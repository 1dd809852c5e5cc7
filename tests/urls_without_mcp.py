"""A URLconf without the MCP endpoint (for the ASGI front's fallback test)."""

from django.urls import URLPattern

urlpatterns: list[URLPattern] = []
