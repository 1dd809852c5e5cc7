"""The demo site for bench/models.py: a plain DRF ListAPIView next to the endpoint, and a
backend whose one principal is the demo superuser (no token lookup on either side)."""

from __future__ import annotations

from project.settings import *  # noqa: F403

ROOT_URLCONF = "bench.drf_urls"
MCP_TOOLS = {**MCP_TOOLS, "AUTH_BACKEND": "bench.drf_urls.SuperuserBackend", "RATE_LIMIT": "off"}  # noqa: F405
REST_FRAMEWORK = {"UNAUTHENTICATED_USER": None}
