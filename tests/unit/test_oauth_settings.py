"""Issue 26: DOT's MCP-ready settings in one line, from the resource URL given once."""

from __future__ import annotations

import pytest

from mcp_tools.oauth.settings import MCP_READY, oauth2_provider_settings


def test_the_issuer_is_the_resource_origin_and_every_key_can_be_overridden() -> None:
    settings = oauth2_provider_settings("https://Example.com:8443/api/mcp")
    assert settings["OIDC_ISS_ENDPOINT"] == "https://example.com:8443"
    assert settings["PKCE_REQUIRED"] is True
    assert settings["SCOPES_BACKEND_CLASS"] == "mcp_tools.oauth.scopes.DatabaseScopes"
    assert {k: v for k, v in settings.items() if k != "OIDC_ISS_ENDPOINT"} == MCP_READY
    changed = oauth2_provider_settings("https://example.com/mcp", DCR_ENABLED=False, OIDC_ISS_ENDPOINT="https://as")
    assert (changed["DCR_ENABLED"], changed["OIDC_ISS_ENDPOINT"]) == (False, "https://as")
    assert MCP_READY["DCR_ENABLED"] is True  # the defaults are not changed by a call


@pytest.mark.parametrize("url", ["", "/mcp", "example.com/mcp", "ftp://example.com/mcp"])
def test_a_resource_url_that_is_not_absolute_is_refused(url: str) -> None:
    with pytest.raises(ValueError, match="absolute URL"):
        oauth2_provider_settings(url)
