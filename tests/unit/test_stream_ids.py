"""GET stream event ids: they name the tool list a client heard of (H-11 resumability)."""

from __future__ import annotations

import pytest

from mcp_tools.transport.streams import get_event_id, heard_in_event_id

SESSION = "Ab-_9xYz" + "q" * 35
FINGERPRINT = "0123456789abcdef01234567"


def test_an_event_id_gives_back_its_fingerprint() -> None:
    event_id = get_event_id(SESSION, "00ff00ff00ff00ff", FINGERPRINT)
    assert heard_in_event_id(event_id, SESSION) == FINGERPRINT


@pytest.mark.parametrize(
    "value",
    [
        None,
        "",
        "0",
        "x-get-1",
        get_event_id("another-session-id", "00ff00ff00ff00ff", FINGERPRINT),  # another session's
        get_event_id(SESSION, "00ff00ff00ff00ff", ""),  # a stream that knew of no list
        get_event_id(SESSION, "00ff00ff00ff00ff", "NOT-HEX"),
        get_event_id(SESSION, "00ff00ff00ff00ff", "a" * 33),
        get_event_id(SESSION, "00ff00ff00ff00ff", FINGERPRINT) + "\u00e9",
    ],
)
def test_an_unreadable_id_says_nothing(value: str | None) -> None:
    assert heard_in_event_id(value, SESSION) is None
