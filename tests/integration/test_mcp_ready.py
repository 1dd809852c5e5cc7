"""``manage.py mcp_ready``: each gap between the site and the hosted clients is named, the
dry-run registrations store nothing, and a ready site says so for each client (issue 34)."""

from __future__ import annotations

import io
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from oauth2_provider.models import Application

pytestmark = pytest.mark.django_db


def _ready(*args: str) -> tuple[str, str]:
    out = io.StringIO()
    try:
        call_command("mcp_ready", *args, stdout=out)
    except CommandError as exc:
        return out.getvalue(), str(exc)
    return out.getvalue(), ""


def test_mcp_ready_names_each_gap(oauth: None, settings: Any) -> None:
    out, failed = _ready()
    assert "GAP  RESOURCE_URL is public HTTPS" in out  # http://testserver
    assert "Claude: not ready" in out
    assert failed
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "RESOURCE_URL": "https://mcp.example.com/mcp"}
    settings.OAUTH2_PROVIDER = {**settings.OAUTH2_PROVIDER, "OIDC_ISS_ENDPOINT": "https://mcp.example.com"}
    settings.ALLOWED_HOSTS = ["mcp.example.com"]
    out, failed = _ready()
    assert failed == "", out
    for client in ("Claude", "ChatGPT", "VS Code", "Cursor"):
        assert f"{client}: ready" in out
    assert "keeps refresh_token" in out
    assert "note Cursor's registration drops cursor://" in out
    assert "note Sign-in and consent forms pass CSRF" in out
    assert not Application.objects.exists()  # the dry-run registrations were rolled back
    # Each gap is named: no sign-in page, CIMD without none, no DCR.
    settings.OAUTH2_PROVIDER = {**settings.OAUTH2_PROVIDER, "DCR_ENABLED": False, "CIMD_ENABLED": False}
    out, failed = _ready("--client", "cursor", "--client", "claude")
    assert "GAP  Dynamic client registration is on" in out
    assert "GAP  Clients can register" in out
    assert "Cursor: not ready" in out
    assert "Claude: not ready" in out
    assert "ChatGPT" not in out.split("\n\n")[-1]


def test_mcp_ready_without_oauth_says_so(demo_tools: None) -> None:
    out, failed = _ready()
    assert "does not take OAuth tokens" in out
    assert failed


def test_mcp_ready_with_an_external_authorization_server(settings: Any, demo_tools: None) -> None:
    settings.MCP_TOOLS = {
        **settings.MCP_TOOLS,
        "AUTH_BACKEND": "mcp_tools.auth.JWTBackend",
        "RESOURCE_URL": "https://mcp.example.com/mcp",
        "AUTHORIZATION_SERVERS": ["https://id.example.com/realms/x"],
        "JWT": {"issuer": "https://id.example.com/realms/x", "jwks_uri": "https://id.example.com/jwks"},
    }
    settings.ALLOWED_HOSTS = ["mcp.example.com"]
    out, failed = _ready()
    assert failed == "", out
    assert "The authorization server is external" in out
