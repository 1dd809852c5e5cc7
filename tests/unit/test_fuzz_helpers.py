"""The fuzzer's own parts (tests/support/fuzz_checks.py, tests/support/fuzz_strategies.py): each check fires on
a crafted bad answer and stays quiet on a good one; drawn messages follow their schema."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings

from tests.support.fuzz_checks import Sent, check_exchange, ids_in_body, internal_leaks, log_problems, message_problems
from tests.support.fuzz_strategies import Drawn, Raw, encode, mutate, schema_messages
from tests.support.mcp_client import _validator

PING = {"jsonrpc": "2.0", "id": 7, "method": "ping"}
JSON = "application/json"
SSE = "text/event-stream"


def sent(body: Any = PING, version: str = "2025-11-25", *, notification: bool = False) -> Sent:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    request = Sent("POST", [("Content-Type", JSON)], raw, version)
    if not isinstance(body, bytes):
        request.request_ids = ids_in_body(body)
        request.must_answer = {} if notification else dict(request.request_ids)
        request.notifications_only = notification
    return request


def kinds(problems: list[Any]) -> set[str]:
    return {problem.kind for problem in problems}


def answer(message: Any) -> bytes:
    return json.dumps(message).encode()


def test_a_good_answer_passes() -> None:
    assert check_exchange(sent(), 200, JSON, answer({"jsonrpc": "2.0", "id": 7, "result": {}})) == []
    stream = b": keep-alive\n\nid: 1\ndata: \n\nevent: message\ndata: " + answer(
        {"jsonrpc": "2.0", "id": 7, "result": {}}
    )
    assert check_exchange(sent(), 200, SSE, stream + b"\n\n") == []
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert check_exchange(sent(note, notification=True), 202, "", b"") == []


def test_server_errors_and_bad_bodies_are_caught() -> None:
    error = answer({"jsonrpc": "2.0", "id": 7, "error": {"code": -32600, "message": "no"}})
    assert "5xx" in kinds(check_exchange(sent(), 502, JSON, error))
    assert "bad body" in kinds(check_exchange(sent(), 400, "text/plain", b"Invalid HTTP request received."))
    assert "bad body" in kinds(check_exchange(sent(), 200, JSON, b"{not json"))
    assert "bad body" in kinds(check_exchange(sent(), 200, SSE, b"data: {oops\n\n"))
    assert "no error body" in kinds(check_exchange(sent(), 400, "", b""))
    internal = answer({"jsonrpc": "2.0", "id": 7, "error": {"code": -32603, "message": "Internal error"}})
    assert "internal error" in kinds(check_exchange(sent(), 200, JSON, internal))


@pytest.mark.parametrize(
    "leak",
    [
        'Traceback (most recent call last):\n  File "/srv/app/views.py", line 3, in f',
        "KeyError: 'name'",
        "TypeError",
        "error in /usr/lib/python3.11/site-packages/django/db/models/query.py",
        "django.db.utils.IntegrityError",
        "UNIQUE constraint failed: mcp_tools_mcpsession.id",
        "SELECT id FROM mcp_tools_tool WHERE name = 'x'",
        "<mcp_tools.models.Tool object at 0x7f3a2b1c>",
    ],
)
def test_internals_in_an_answer_are_caught(leak: str) -> None:
    body = answer({"jsonrpc": "2.0", "id": 7, "error": {"code": -32602, "message": leak}})
    assert "internals" in kinds(check_exchange(sent(), 200, JSON, body))


def test_an_echo_of_the_request_is_not_a_leak() -> None:
    assert internal_leaks("Unknown tool: KeyError", lambda: '{"name": "KeyError"}') == []
    assert internal_leaks("No forecast for 'x.py'", lambda: '{"city": "x.py"}') == []
    assert internal_leaks("Unknown tool: KeyError", lambda: '{"name": "other"}') != []


def test_schema_violations_are_caught_per_revision() -> None:
    assert "schema" in kinds(message_problems("2025-11-25", {"jsonrpc": "2.0", "id": 1, "result": []}, "ping"))
    no_tools = {"jsonrpc": "2.0", "id": 1, "result": {"nextCursor": "x"}}
    assert "schema" in kinds(message_problems("2025-11-25", no_tools, "tools/list"))
    # resource_link content blocks came with 2025-06-18: not valid for a 2025-03-26 client.
    link = {"type": "resource_link", "uri": "file:///x", "name": "x"}
    call = {"jsonrpc": "2.0", "id": 1, "result": {"content": [link]}}
    assert message_problems("2025-06-18", call, "tools/call") == []
    assert "schema" in kinds(message_problems("2025-03-26", call, "tools/call"))
    bad_note = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": "half"}}
    assert "schema" in kinds(message_problems("2025-11-25", bad_note, None))


def test_unreadable_ids_follow_each_revision() -> None:
    """Null where the schema requires an id (2025-03-26, 2025-06-18), omitted after (L-9)."""
    error = {"code": -32700, "message": "Parse error"}
    for version in ("2025-03-26", "2025-06-18"):
        assert kinds(message_problems(version, {"jsonrpc": "2.0", "error": error}, None)) == {"missing id"}
        assert message_problems(version, {"jsonrpc": "2.0", "id": None, "error": error}, None) == []
    for version in ("2025-11-25", "2026-07-28"):
        assert message_problems(version, {"jsonrpc": "2.0", "error": error}, None) == []
        assert kinds(message_problems(version, {"jsonrpc": "2.0", "id": None, "error": error}, None)) == {"schema"}
    assert "schema" in kinds(message_problems("2025-03-26", {"jsonrpc": "2.0", "id": None, "result": {}}, "ping"))


def test_a_readable_id_is_not_dropped() -> None:
    request = sent({"jsonrpc": "1.0", "id": 7, "method": "ping"})
    request.readable_id = "7"
    invalid = answer({"jsonrpc": "2.0", "error": {"code": -32600, "message": "Invalid Request"}})
    assert kinds(check_exchange(request, 400, JSON, invalid)) == {"dropped id"}
    assert check_exchange(request, 415, JSON, invalid) == []  # refused before the body was read
    echoed = answer({"jsonrpc": "2.0", "id": 7, "error": {"code": -32600, "message": "Invalid Request"}})
    assert check_exchange(request, 400, JSON, echoed) == []


def test_answers_must_match_the_request() -> None:
    other_id = answer({"jsonrpc": "2.0", "id": 8, "result": {}})
    assert kinds(check_exchange(sent(), 200, JSON, other_id)) == {"id mismatch", "no response"}
    string_id = answer({"jsonrpc": "2.0", "id": "7", "result": {}})
    assert "id mismatch" in kinds(check_exchange(sent(), 200, JSON, string_id))
    assert kinds(check_exchange(sent(), 200, SSE, b"")) == {"no response"}
    assert kinds(check_exchange(sent(), 202, "", b"")) == {"no response"}
    note = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}}
    reply = answer({"jsonrpc": "2.0", "id": 7, "result": {}})
    problems = check_exchange(sent(note, notification=True), 200, JSON, reply)
    assert "answered notification" in kinds(problems)
    batch = [PING, {**PING, "id": "b"}]
    one = answer([{"jsonrpc": "2.0", "id": 7, "result": {}}])
    assert [p.key for p in check_exchange(sent(batch, "2025-03-26"), 200, JSON, one)] == ["ping"]


def test_the_server_log_is_read() -> None:
    assert log_problems("Task 1 created: tool 'noop' for anonymous\n") == []
    traceback = (
        "Unexpected error serving tools/call\nTraceback (most recent call last):\n"
        '  File "x.py", line 1, in f\nKeyError: 1\n\nDuring handling of the above exception, another'
        ' exception occurred:\n\nTraceback (most recent call last):\n  File "y.py", line 2, in g\n'
        "RecursionError: maximum recursion depth exceeded\n"
    )
    assert [p.key for p in log_problems(traceback)] == ["Traceback: RecursionError in y.py:g"]
    app = traceback.replace('"y.py"', '"/srv/mcp_tools/services/tools.py"').replace("in g", "in call_tool")
    assert [p.key for p in log_problems(app)] == ["Traceback: RecursionError in services/tools.py:call_tool"]
    warning = "/x/base.py:119: CacheKeyWarning: Cache key will cause errors\n  warnings.warn(w)\n"
    assert [p.key for p in log_problems(warning)] == ["warning: CacheKeyWarning"]
    assert [p.key for p in log_problems("Internal Server Error: /mcp\n")] == ["Internal Server Error"]


def test_encode_splices_raw_json_and_mutate_changes_things() -> None:
    body = encode({"a": Raw("[[[]]]"), "b": "\ud800"})
    assert body == b'{"a": [[[]]], "b": "\\ud800"}'
    rng = random.Random(5)
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo"}}
    assert any(mutate(rng, message) != message for _ in range(20))
    assert message == {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo"}}


@settings(
    max_examples=20,
    deadline=None,
    database=None,
    phases=[Phase.generate],
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)
@given(schema_messages())
def test_drawn_messages_follow_their_schema(drawn: Drawn) -> None:
    errors = list(_validator(drawn.rev, drawn.name).iter_errors(drawn.message))
    assert not errors, (drawn.rev, drawn.name, [e.message for e in errors[:3]])
