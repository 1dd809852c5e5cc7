"""Node.js side of the end-to-end tests: the npm packages pinned in tests/e2e/js and the Node 22 they ship.

`node()` installs the packages with `npm ci` when they are missing or stale (once per test session) and
returns the path of the pinned Node binary. Without npm or the registry the tests that need it are skipped,
or fail when CI=true.
"""

from __future__ import annotations

import functools
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support import external_services

JS_DIR = Path(__file__).resolve().parents[1] / "e2e" / "js"
NODE_MODULES = JS_DIR / "node_modules"
NODE_BIN = NODE_MODULES / "node" / "bin" / "node"
CONFORMANCE_CLI = NODE_MODULES / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"


def _installed_matches_manifest() -> bool:
    """True when every dependency pinned in package.json is installed at exactly that version."""
    if not NODE_BIN.exists():
        return False
    wanted: dict[str, str] = json.loads((JS_DIR / "package.json").read_text())["dependencies"]
    for name, version in wanted.items():
        manifest = NODE_MODULES / name / "package.json"
        if not manifest.exists() or json.loads(manifest.read_text()).get("version") != version:
            return False
    return True


@functools.cache
def _prepare() -> tuple[Path | None, str]:
    """Install the npm packages if needed. Returns (node binary, "") or (None, reason it is unavailable)."""
    if not _installed_matches_manifest():
        npm = shutil.which("npm")
        if npm is None:
            return None, "npm is not installed, so the Node.js packages of tests/e2e/js cannot be installed"
        try:
            done = subprocess.run(
                [npm, "ci", "--no-audit", "--no-fund"], cwd=JS_DIR, capture_output=True, text=True, timeout=240
            )
        except subprocess.TimeoutExpired:
            return None, "`npm ci` in tests/e2e/js timed out after 240 s"
        if done.returncode != 0 or not _installed_matches_manifest():
            return None, f"`npm ci` in tests/e2e/js failed (exit {done.returncode}):\n{done.stdout}\n{done.stderr}"
    version = subprocess.run([NODE_BIN, "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
    if not version.startswith("v22."):
        return None, f"{NODE_BIN.relative_to(JS_DIR.parent)} is {version!r}, expected Node 22"
    return NODE_BIN, ""


def node() -> Path:
    """The pinned Node 22 binary, installing tests/e2e/js first; skips (fails in CI) when unavailable."""
    binary, reason = _prepare()
    if binary is None:
        if external_services.IN_CI:
            pytest.fail(f"{reason} (CI=true: missing Node.js packages are a failure)")
        pytest.skip(reason)
    return binary
