"""End-to-end fixtures: a real uvicorn server with short-lived streams for stream tests.

``make test-e2e`` runs these files on three pytest-xdist workers, a file at a time per worker
(``--dist loadfile --no-loadscope-reorder``), longest files first so the two finish together;
the tests marked ``timing`` (they measure a latency) run after that, alone.
"""

from __future__ import annotations

import shutil
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import external_services, nodejs, servers
from tests.support.servers import LiveServer, run_server

HERE = Path(__file__).parent

# The e2e files by how long they take (the durations of CI runs on 2026-11-25), longest first;
# a file not named here runs after these, in name order.
LONGEST_FIRST = (
    "test_list_changed.py",
    "test_scale.py",
    "test_fuzz.py",
    "test_oauth_e2e.py",
    "test_admin_browser.py",
    "test_wheel.py",
    "test_soak.py",
    "test_apps_browser.py",
    "test_view_authority.py",
    "test_drf_sdk.py",
    "test_worker_loss.py",
    "test_round_trips.py",
    "test_reuse.py",
    "test_audit_flush.py",
    "test_http_streams.py",
    "test_first_hour.py",  # issue 34: not yet timed in CI (about 2 min on an idle machine)
    "test_stateful.py",
    "test_builtin_kinds.py",
    "test_approvals_e2e.py",
    "test_tasks_worker.py",
    "test_drf_read_lock.py",
    "test_catalog_consistency.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Longest files first (a stable sort: the tests of a file keep their order)."""

    def rank(item: pytest.Item) -> tuple[int, str]:
        if item.path.parent != HERE:
            return (-1, "")  # the rest of a wider run keeps its place and order
        name = item.path.name
        return (LONGEST_FIRST.index(name) if name in LONGEST_FIRST else len(LONGEST_FIRST), name)

    items.sort(key=rank)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
    """A failed test's report says which of its servers ended by themselves, and how (a
    signal, an exit code) with the end of their logs: a client sees only a lost connection."""
    report: Any = yield
    if report.failed:
        ended = [*servers.ENDED_BY_THEMSELVES]
        ended += [found for server in servers.RUNNING if (found := servers.ended_by_itself(server))]
        for number, text in enumerate(ended, 1):
            report.sections.append((f"server that ended by itself ({number})", text))
    if report.when == "teardown":
        servers.ENDED_BY_THEMSELVES.clear()
    return report


@pytest.fixture(scope="module", params=["front", "view"])
def stream_server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """Streams end after 1.5 s and keep-alives every 0.5 s, so stream tests finish quickly.

    Once with the endpoint answered by mcp_tools.asgi.McpFront (the demo's deployment) and once
    as a plain view behind Django's ASGI handler and the demo's middleware.
    """
    tmp = tmp_path_factory.mktemp("streams")
    env = {"MCP_SSE_MAX_SECONDS": "1.5", "MCP_SSE_KEEPALIVE_SECONDS": "0.5", "MCP_PAGE_SIZE": "4"}
    env["MCP_ASGI_FRONT"] = "1" if request.param == "front" else "0"
    with run_server(tmp, extra_env=env) as server:
        yield server


@pytest.fixture(scope="module")
def node() -> Path:
    """The Node.js 22 of tests/e2e/js (skips, or fails in CI, when it is not installed)."""
    return nodejs.node()


def _require_browser() -> tuple[str, str]:
    """Debian's chromium and chromedriver, found on PATH (never downloaded)."""
    found = {name: shutil.which(name) for name in ("chromium", "chromedriver")}
    missing = [name for name, path in found.items() if path is None]
    if missing:
        message = f"{', '.join(missing)} not on PATH (Debian packages chromium and chromium-driver)"
        if external_services.IN_CI:
            pytest.fail(f"{message}; CI=true: a missing browser is a failure")
        pytest.skip(message)
    return str(found["chromium"]), str(found["chromedriver"])


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One Chromium for the module (about 1 s to start); each test starts with no cookies."""
    chromium, chromedriver = _require_browser()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}",
        "--window-size=1280,1600",
    ):
        options.add_argument(flag)
    # An explicit driver path: Selenium Manager never runs, nothing is downloaded.
    driver = webdriver.Chrome(service=Service(executable_path=chromedriver), options=options)
    driver.implicitly_wait(5)
    try:
        yield driver
    finally:
        driver.quit()
