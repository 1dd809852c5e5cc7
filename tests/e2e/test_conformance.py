"""The official MCP conformance suite (@modelcontextprotocol/conformance, pinned in tests/e2e/js) against the
demo site under uvicorn.

Scenarios a tools-only server cannot pass are listed, each with its reason, in
tests/e2e/conformance-baseline.yml; the suite fails on any other failure and on a baseline entry that passes.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import nodejs
from tests.support.servers import LiveServer, run_server

pytestmark = [pytest.mark.e2e, pytest.mark.node]

BASELINE = Path(__file__).resolve().parent / "conformance-baseline.yml"


@pytest.fixture(scope="module")
def conformance_server(node: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    with run_server(tmp_path_factory.mktemp("conformance")) as live:
        yield live


def conformance(node: Path, conformance_server: LiveServer, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [node, nodejs.CONFORMANCE_CLI, "server", "--url", conformance_server.url, *args],
        cwd=cwd,  # keep anything the CLI writes out of the work tree
        capture_output=True,
        text=True,
        timeout=240,
    )


def test_conformance_active_suite(node: Path, conformance_server: LiveServer, tmp_path: Path) -> None:
    """Active server suite of conformance 0.1.16 (2025-06-18 / 2025-11-25 scenarios): lifecycle (L-1, L-3),
    ping (PG-1), logging (LG-1), tools/list and every tools/call content type (T-1, T-3, T-10), tool errors
    (T-9), progress (P-1), concurrent POST requests (H-4, H-7) and DNS-rebinding protection (H-2)."""
    done = conformance(node, conformance_server, tmp_path, "--suite", "active", "--expected-failures", str(BASELINE))
    assert done.returncode == 0, (
        f"conformance exited {done.returncode}\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"
        f"\n--- server log\n{conformance_server.log()[-4000:]}"
    )
    assert "Baseline check passed" in done.stdout, done.stdout


def test_conformance_json_schema_2020_12(node: Path, conformance_server: LiveServer, tmp_path: Path) -> None:
    """The pending `json-schema-2020-12` scenario (not in the active suite): a tool's 2020-12 input schema
    (`$schema`, `$defs`, `$ref`, `allOf`/`if`/`then`/`else`) is listed unchanged (L-16, T-3)."""
    done = conformance(node, conformance_server, tmp_path, "--scenario", "json-schema-2020-12")
    assert done.returncode == 0, f"conformance exited {done.returncode}\n{done.stdout}\n{done.stderr}"
