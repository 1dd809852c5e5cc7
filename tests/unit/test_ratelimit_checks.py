"""Rate grammar, the rate-limit counter, and the system checks that catch bad values at startup."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.cache import cache
from django.core.exceptions import ValidationError

from mcp_tools.checks import check_settings
from mcp_tools.ratelimit import Rate, hit, parse_rate, validate_rate


@pytest.mark.parametrize(
    ("value", "expected"),
    [("10/m", Rate(10, 60)), ("500/h", Rate(500, 3600)), ("20/30s", Rate(20, 30)), (" 3 / d ", Rate(3, 86400))],
)
def test_parse_rate(value: str, expected: Rate) -> None:
    assert parse_rate(value) == expected


@pytest.mark.parametrize("value", [None, "", "off", "OFF"])
def test_parse_rate_off(value: str | None) -> None:
    assert parse_rate(value) is None


@pytest.mark.parametrize("value", ["100/min", "ten/m", "10", "/m"])
def test_parse_rate_rejects_and_the_model_validator_agrees(value: str) -> None:
    with pytest.raises(ValueError, match="Invalid rate"):
        parse_rate(value)
    with pytest.raises(ValidationError):
        validate_rate(value)


def test_hit_counts_per_window() -> None:
    cache.clear()
    rate = Rate(2, 60)
    assert hit("alice\0echo", rate) is None
    assert hit("alice\0echo", rate) is None
    retry = hit("alice\0echo", rate)
    assert retry is not None
    assert 1.0 <= retry <= 60
    assert hit("bob\0echo", rate) is None  # another principal has its own window


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("RATE_LIMIT", "100/min"),
        ("REGISTRATION_RATE_LIMIT", "x"),
        ("SCOPE_ADVERTISING", "progresive"),
        ("THREAD_POOL_SIZE", 0),
        ("THREAD_POOL_SIZE", "8"),
    ],
)
def test_bad_values_fail_the_system_checks(settings: Any, key: str, value: object) -> None:
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, key: value}
    errors = check_settings()
    assert [e.id for e in errors] == ["mcp_tools.E001"]
    assert key in errors[0].msg
