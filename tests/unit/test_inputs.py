"""Requests for input on the wire (protocol.inputs) and the handle types' retention sentence: no database."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_tools.protocol import inputs
from mcp_tools.protocol.inputs import ELICIT, SAMPLE
from mcp_tools.types import HandleType

FORM = {"type": "object", "properties": {"name": {"type": "string"}}}


@pytest.mark.parametrize(
    ("method", "capabilities", "version", "can"),
    [
        (ELICIT, {"elicitation": {}}, "2025-11-25", True),  # {} means form mode
        (ELICIT, {"elicitation": {"form": {}, "url": {}}}, "2026-07-28", True),
        (ELICIT, {"elicitation": {"url": {}}}, "2026-07-28", False),  # URL mode only: no forms
        (ELICIT, {"elicitation": {}}, "2025-06-18", True),
        (ELICIT, {"elicitation": {}}, "2025-03-26", False),  # no elicitation in that revision
        (ELICIT, {}, "2025-11-25", False),
        (ELICIT, {"elicitation": True}, "2025-11-25", False),
        (SAMPLE, {"sampling": {}}, "2025-03-26", True),
        (SAMPLE, {"elicitation": {}}, "2026-07-28", False),
        ("roots/list", {"roots": {}}, "2026-07-28", False),
    ],
)
def test_only_what_the_client_declared(method: str, capabilities: dict[str, Any], version: str, can: bool) -> None:
    """L-6, LD-7, T-D1: never a request of a kind the client did not declare."""
    assert inputs.client_can(method, capabilities, version) is can


def test_form_requests_name_their_mode_where_the_revision_has_one() -> None:
    params = {"message": "m", "requestedSchema": FORM}
    assert inputs.shape_params(ELICIT, params, "2025-06-18") == params
    assert inputs.shape_params(ELICIT, params, "2025-11-25")["mode"] == "form"
    assert inputs.shape_params(ELICIT, params, "2026-07-28")["mode"] == "form"
    assert "mode" not in inputs.shape_params(SAMPLE, {"messages": [], "maxTokens": 1}, "2026-07-28")


def test_the_digest_names_the_question() -> None:
    one = inputs.request_digest(ELICIT, {"message": "a", "requestedSchema": FORM})
    assert one == inputs.request_digest(ELICIT, {"requestedSchema": FORM, "message": "a"})  # key order is no matter
    assert one != inputs.request_digest(ELICIT, {"message": "b", "requestedSchema": FORM})
    assert one != inputs.request_digest(SAMPLE, {"message": "a", "requestedSchema": FORM})


@pytest.mark.parametrize(
    ("schema", "problem"),
    [
        (FORM, None),
        ({"type": "object", "properties": {"tags": {"type": "array", "items": {"enum": ["a"]}}}}, None),
        ({"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string"}}}}, "'tags'"),
        ({"type": "object", "properties": {"where": {"type": "object"}}}, "'where'"),
        ({"type": "object"}, "properties"),
        ({"type": "string"}, "object schema"),
        (None, "object schema"),
    ],
)
def test_forms_are_flat(schema: Any, problem: str | None) -> None:
    problems = inputs.form_schema_problems(schema)
    if problem is None:
        assert problems == []
    else:
        assert problem in " ".join(problems)


def test_2025_06_18_forms_have_no_multi_select() -> None:
    multi = {"type": "object", "properties": {"tags": {"type": "array", "items": {"enum": ["a"]}}}}
    assert inputs.form_fits(multi, "2025-11-25")
    assert not inputs.form_fits(multi, "2025-06-18")
    assert inputs.form_fits(FORM, "2025-06-18")


@pytest.mark.parametrize(
    ("method", "answer", "ok"),
    [
        (ELICIT, {"action": "accept", "content": {"name": "a"}}, True),
        (ELICIT, {"action": "decline"}, True),
        (ELICIT, {"action": "later"}, False),
        (ELICIT, {"action": "accept", "content": "a"}, False),
        (ELICIT, "accept", False),
        (SAMPLE, {"role": "assistant", "content": {"type": "text", "text": "t"}, "model": "m"}, True),
        (SAMPLE, {"role": "assistant", "content": [], "model": "m"}, True),
        (SAMPLE, {"role": "assistant", "content": "t", "model": "m"}, False),
        (SAMPLE, {"content": {"type": "text", "text": "t"}}, False),
    ],
)
def test_answers_have_the_shape_of_their_result(method: str, answer: Any, ok: bool) -> None:
    assert (inputs.answer_problems(method, answer) == []) is ok


def test_a_missing_capability_is_32021_with_what_is_needed() -> None:
    error = inputs.missing_capability([ELICIT, SAMPLE])
    assert (error.code, error.http_status) == (-32021, 400)
    assert error.data == {"requiredCapabilities": {"elicitation": {"form": {}}, "sampling": {}}}


@pytest.mark.parametrize(
    ("seconds", "sliding", "sentence"),
    [
        (24 * 3600, True, "A basket expires after 24 hours of inactivity."),
        (2 * 86400, True, "A basket expires after 2 days of inactivity."),
        (30 * 60, False, "A basket expires 30 minutes after it is created."),
        (3600, True, "A basket expires after 1 hour of inactivity."),
        (90, True, "A basket expires after 90 seconds of inactivity."),
    ],
)
def test_the_retention_in_words(seconds: int, sliding: bool, sentence: str) -> None:
    assert HandleType("bsk", "basket", seconds, sliding).retention == sentence
