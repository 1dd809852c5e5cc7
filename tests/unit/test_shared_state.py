"""shared_state.degrade: the cache's failure costs the request one feature, logged once a minute."""

from __future__ import annotations

import logging

import pytest

from mcp_tools import shared_state


def _unreachable() -> int:
    raise ConnectionError("connection refused")


def test_work_that_succeeds_is_returned() -> None:
    assert shared_state.degrade("rate limits", lambda: 7, fallback=0) == 7


def test_a_failing_cache_gives_the_fallback_and_one_warning_a_minute(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(shared_state, "_warned", {})
    clock = iter([1000.0, 1010.0, 1061.0])
    monkeypatch.setattr(shared_state.time, "monotonic", lambda: next(clock))
    with caplog.at_level(logging.WARNING, logger="mcp_tools"):
        results = [shared_state.degrade("rate limits", _unreachable, fallback=0) for _ in range(3)]
    assert results == [0, 0, 0]
    warned = [r.getMessage() for r in caplog.records]
    assert (
        warned == ["The cache is unreachable (ConnectionError: connection refused); serving without rate limits"] * 2
    )  # at 1000 s and 1061 s, not at 1010 s
