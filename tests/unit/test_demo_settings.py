"""The demo and the package as a new user meets them: the OAuth audience follows HOST and PORT,
and installing prints no deprecation warnings."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
READ = (
    "import json, project.settings as s; "
    "print(json.dumps([s.MCP_TOOLS['RESOURCE_URL'], s.OAUTH2_PROVIDER['OIDC_ISS_ENDPOINT']]))"
)


def _settings(**env: str) -> list[str]:
    clean = {k: v for k, v in os.environ.items() if k not in ("HOST", "PORT", "MCP_RESOURCE_URL")}
    out = subprocess.run(
        [sys.executable, "-c", READ], cwd=ROOT, env={**clean, **env}, capture_output=True, text=True, check=True
    )
    return list(json.loads(out.stdout))


@pytest.mark.parametrize(
    ("env", "resource", "issuer"),
    [
        ({}, "http://127.0.0.1:8000/mcp", "http://127.0.0.1:8000"),
        ({"PORT": "9123"}, "http://127.0.0.1:9123/mcp", "http://127.0.0.1:9123"),
        ({"HOST": "localhost", "PORT": "8080"}, "http://localhost:8080/mcp", "http://localhost:8080"),
        ({"HOST": "0.0.0.0", "PORT": "8001"}, "http://127.0.0.1:8001/mcp", "http://127.0.0.1:8001"),  # noqa: S104
        ({"HOST": "::1", "PORT": "8002"}, "http://[::1]:8002/mcp", "http://[::1]:8002"),
        ({"PORT": "9123", "MCP_RESOURCE_URL": ""}, "http://127.0.0.1:9123/mcp", "http://127.0.0.1:9123"),
        (
            {"PORT": "9123", "MCP_RESOURCE_URL": "https://mcp.example.com/mcp"},
            "https://mcp.example.com/mcp",
            "https://mcp.example.com",
        ),
    ],
)
def test_the_resource_url_follows_host_and_port_unless_set(env: dict[str, str], resource: str, issuer: str) -> None:
    assert _settings(MCP_AUTH="oauth", **env) == [resource, issuer]


def test_the_package_metadata_uses_forms_setuptools_does_not_deprecate() -> None:
    """``pip install -e .`` printed setuptools' ``project.license`` table deprecation three times:
    the license is an SPDX string, which needs setuptools 77 or later to build."""
    import re
    import tomllib

    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert isinstance(data["project"]["license"], str)
    assert not [c for c in data["project"].get("classifiers", []) if c.startswith("License ::")]  # PEP 639
    (setuptools,) = [r for r in data["build-system"]["requires"] if r.startswith("setuptools")]
    minimum = re.search(r">=\s*(\d+)", setuptools)
    assert minimum is not None
    assert int(minimum.group(1)) >= 77
