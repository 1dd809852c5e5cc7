"""Celery's lines about the housekeeping tasks go to DEBUG; every other line is untouched."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from mcp_tools.tasking.quiet import HousekeepingAtDebug, install


def _record(name: str, level: int, message: str) -> logging.LogRecord:
    return logging.LogRecord(name, level, __file__, 1, message, None, None)


@pytest.fixture
def root_at(request: pytest.FixtureRequest) -> Iterator[None]:
    root = logging.getLogger()
    before = root.level
    root.setLevel(request.param)
    yield
    root.setLevel(before)


@pytest.mark.parametrize("root_at", [logging.INFO], indirect=True)
@pytest.mark.usefixtures("root_at")
def test_housekeeping_lines_are_dropped_at_info() -> None:
    quiet = HousekeepingAtDebug()
    sent = _record("celery.beat", logging.INFO, "Scheduler: Sending due task x (mcp_tools.sweep_lost_tasks)")
    assert quiet.filter(sent) is False
    assert sent.levelname == "DEBUG"
    received = _record("celery.worker.strategy", logging.INFO, "Task mcp_tools.expire_approvals[1] received")
    assert quiet.filter(received) is False
    # Another task's lines, an MCP task's own outcome, and failures are kept as they are.
    assert quiet.filter(_record("celery.app.trace", logging.INFO, "Task mcp_tools.run_task[1] succeeded")) is True
    assert quiet.filter(_record("mcp_tools", logging.INFO, "Task abc completed")) is True
    failed = _record("celery.app.trace", logging.ERROR, "Task mcp_tools.sweep_lost_tasks[1] raised")
    assert quiet.filter(failed) is True
    assert failed.levelname == "ERROR"


@pytest.mark.parametrize("root_at", [logging.DEBUG], indirect=True)
@pytest.mark.usefixtures("root_at")
def test_housekeeping_lines_are_shown_at_debug() -> None:
    record = _record("celery.beat", logging.INFO, "Scheduler: Sending due task x (mcp_tools.sweep_lost_tasks)")
    assert HousekeepingAtDebug().filter(record) is True
    assert record.levelname == "DEBUG"


def test_install_adds_the_filter_once_per_root_handler() -> None:
    root = logging.getLogger()
    handler = logging.NullHandler()
    root.addHandler(handler)
    try:
        install()
        install()
        assert sum(isinstance(f, HousekeepingAtDebug) for f in handler.filters) == 1
    finally:
        root.removeHandler(handler)
