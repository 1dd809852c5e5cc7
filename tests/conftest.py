"""Shared fixtures: schema validation of every response, registry isolation, live servers."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings

from tests.support import external_services

# Hypothesis: in CI (and under `make`) every property test draws the same examples on every run
# (derandomize: the seed comes from the test's own code), keeps no example database, and has no
# deadline nor too_slow health check, so a slow moment of a shared machine is not a failure. A
# test's own @seed(...) still wins (tests/support/fuzz_strategies.py seeds its pool from MCP_FUZZ_SEED
# that way, with derandomize=False). Locally the default profile draws fresh examples;
# HYPOTHESIS_PROFILE=ci gives the CI behaviour anywhere.
hypothesis_settings.register_profile(
    "ci",
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],  # a timing, not a property of the code
    print_blob=True,
)
HYPOTHESIS_PROFILE = os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if external_services.IN_CI else "default")
hypothesis_settings.load_profile(HYPOTHESIS_PROFILE)


def pytest_configure(config: pytest.Config) -> None:
    if (
        os.environ.get("MCP_TEST_DB") == "postgres"
        and not external_services.reachable("postgres")
        and external_services.IN_CI
    ):
        raise pytest.UsageError("MCP_TEST_DB=postgres but PostgreSQL is not reachable (CI=true)")


@pytest.fixture(scope="session", autouse=True)
def _postgres_test_database_left_free(request: pytest.FixtureRequest) -> Iterator[None]:
    """On PostgreSQL, the test database is dropped at the end of the session, which fails while
    any other session uses it. The product's own threads may: the audit writer keeps its
    connection until it was idle ``audit._IDLE_CLOSE_SECONDS`` (2 s), so a batch written in the
    last seconds of a run still holds one. Before the drop this waits for them to leave (a few
    seconds) and ends, and names, whichever did not."""
    if os.environ.get("MCP_TEST_DB") != "postgres" or request.config.getoption("reuse_db", False):
        yield  # (--reuse-db: the database is kept, nothing to wait for)
        return
    request.getfixturevalue("django_db_setup")  # torn down after this fixture's own teardown
    yield
    import time

    from django.db import connections

    blocker = request.getfixturevalue("django_db_blocker")
    others = (
        "SELECT pid, application_name, state, left(query, 120) FROM pg_stat_activity "
        "WHERE datname = current_database() AND pid <> pg_backend_pid()"
    )
    with blocker.unblock():
        for connection in connections.all(initialized_only=True):
            if connection.vendor != "postgresql":
                continue
            deadline = time.monotonic() + 5.0
            with connection.cursor() as cursor:
                while True:
                    cursor.execute(others)
                    left = cursor.fetchall()
                    if not left or time.monotonic() > deadline:
                        break
                    time.sleep(0.2)
                for pid, *what in left:
                    print(f"\nended a session still on the test database: {pid} {what}")
                    cursor.execute("SELECT pg_terminate_backend(%s)", [pid])


@pytest.fixture
def anyio_backend() -> str:
    """Async tests (marked anyio) run on asyncio, the loop uvicorn and Django use."""
    return "asyncio"


@pytest.fixture(autouse=True)
def _fresh_catalog() -> Iterator[None]:
    from mcp_tools import catalog
    from mcp_tools.editing import problems
    from mcp_tools.ui import render

    catalog.reset()
    render.reset()  # rendered views are keyed by (pk, version): test databases reuse both
    problems.reset()  # so are the system checks' findings
    # A process runs the database checks once, after its first catalog (editing.problems): not
    # inside whichever test happens to come first (its queries counted); tests of it unset this.
    catalog._announced = True
    yield
    catalog.reset()
    render.reset()


@pytest.fixture(scope="session")
def live_server_mcp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """The demo site under uvicorn on SQLite, with the demo tools loaded."""
    from tests.support.servers import run_server

    tmp: Path = tmp_path_factory.mktemp("live")
    with run_server(tmp) as server:
        yield server
