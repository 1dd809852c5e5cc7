"""Tools that ask: ``ctx.elicit`` and ``ctx.sample`` through the test client.

2026-07-28 (T-D1, T-D2, LD-7): a question is an ``input_required`` result with ``inputRequests``
and a signed ``requestState``; the retry carries ``inputResponses`` and runs the handler again
from the start. Legacy revisions (L-6) ask on the call's stream: the parts that need no live
stream are tested here, the stream itself end to end (tests/e2e/test_stateful.py).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from django.core import signing

from mcp_tools.asking import StreamAsker, record_answer
from mcp_tools.exceptions import InputUnavailable, ToolCancelled
from mcp_tools.models import McpHandle, McpPendingInput, McpSession, Tool
from mcp_tools.registry import ToolKind, registry
from tests.support.mcp_client import MODERN, Mcp, modern_meta

pytestmark = pytest.mark.django_db

ELICITS = {"elicitation": {}}
ACCEPT_USER = {"action": "accept", "content": {"username": "ada", "email": "ada@example.com"}}


def _meta(capabilities: dict[str, Any] | None = None) -> dict[str, Any]:
    return modern_meta(**{"io.modelcontextprotocol/clientCapabilities": capabilities or {}})


def call(
    mcp: Mcp,
    name: str,
    arguments: dict[str, Any],
    *,
    capabilities: dict[str, Any] | None = None,
    state: Any = None,
    responses: Any = None,
    user: str | None = None,
) -> tuple[int, dict[str, Any]]:
    """One 2026-07-28 tools/call: (HTTP status, the JSON-RPC response), validated against the schema."""
    params: dict[str, Any] = {"name": name, "arguments": arguments, "_meta": _meta(capabilities)}
    if state is not None:
        params["requestState"] = state
    if responses is not None:
        params["inputResponses"] = responses
    headers = {"X-Test-User": user} if user else None
    response, message, _ = mcp.request("tools/call", params, headers=headers)
    return response.status_code, message


def result_of(mcp: Mcp, name: str, arguments: dict[str, Any], **kw: Any) -> dict[str, Any]:
    status, message = call(mcp, name, arguments, **kw)
    assert status == 200, message
    assert "result" in message, message
    return dict(message["result"])


@pytest.fixture
def modern(mcp: Mcp) -> Mcp:
    return mcp.modern()


@pytest.fixture
def recorder() -> Iterator[list[str]]:
    """A tool ``asker`` whose handler notes what it does before, between and after two questions."""
    calls: list[str] = []

    def two_questions(ctx: Any) -> str:
        calls.append("before")
        first = ctx.elicit("Your name?", {"type": "object", "properties": {"name": {"type": "string"}}})
        calls.append("between")
        second = ctx.elicit("Your age?", {"type": "object", "properties": {"age": {"type": "integer"}}})
        calls.append("after")  # the side effect: after every question
        return f"{first.content['name']} is {second.content['age']}"

    registry.register(ToolKind("test.two_questions", two_questions))
    Tool.objects.create(name="asker", description="asks twice", handler_key="test.two_questions")
    yield calls
    registry.unregister("test.two_questions")


# --------------------------------------------------------------------------- 2026-07-28


def test_a_question_is_an_input_required_result(modern: Mcp) -> None:
    """T-D1: resultType input_required, an elicitation/create request of the form, a requestState."""
    result = result_of(modern, "test_elicitation", {"message": "Who are you?"}, capabilities=ELICITS)
    assert result["resultType"] == "input_required"
    assert list(result["inputRequests"]) == ["elicit-1"]
    request = result["inputRequests"]["elicit-1"]
    assert request["method"] == "elicitation/create"
    assert request["params"]["mode"] == "form"
    assert request["params"]["message"] == "Who are you?"
    assert request["params"]["requestedSchema"]["required"] == ["username", "email"]
    assert isinstance(result["requestState"], str)
    assert "ttlMs" not in result  # T-D3: never cacheable
    done = result_of(
        modern,
        "test_elicitation",
        {"message": "Who are you?"},
        capabilities=ELICITS,
        state=result["requestState"],
        responses={"elicit-1": ACCEPT_USER},
    )
    assert done["resultType"] == "complete"
    assert done["content"][0]["text"] == (
        'User response: action=accept, content={"email": "ada@example.com", "username": "ada"}'
    )


def test_without_the_capability_the_call_answers_32021(modern: Mcp) -> None:
    """LD-7: a question the request did not declare it can answer: HTTP 400, -32021, what is needed."""
    status, message = call(modern, "test_elicitation", {"message": "Who?"})
    assert status == 400
    assert message["error"]["code"] == -32021
    assert message["error"]["data"] == {"requiredCapabilities": {"elicitation": {"form": {}}}}
    status, message = call(modern, "test_sampling", {"prompt": "Hi"}, capabilities=ELICITS)
    assert status == 400
    assert message["error"]["data"] == {"requiredCapabilities": {"sampling": {}}}
    # A client that only does URL-mode elicitation cannot answer a form either.
    status, message = call(modern, "test_elicitation", {"message": "Who?"}, capabilities={"elicitation": {"url": {}}})
    assert status == 400


def test_sampling_round_trip(modern: Mcp) -> None:
    result = result_of(modern, "test_sampling", {"prompt": "Capital of France?"}, capabilities={"sampling": {}})
    request = result["inputRequests"]["sample-1"]
    assert request == {
        "method": "sampling/createMessage",
        "params": {
            "messages": [{"role": "user", "content": {"type": "text", "text": "Capital of France?"}}],
            "maxTokens": 100,
        },
    }
    answer = {"role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "m", "stopReason": "endTurn"}
    done = result_of(
        modern,
        "test_sampling",
        {"prompt": "Capital of France?"},
        capabilities={"sampling": {}},
        state=result["requestState"],
        responses={"sample-1": answer},
    )
    assert done["content"] == [{"type": "text", "text": "LLM response: Paris"}]


def test_the_handler_runs_again_with_the_answers_at_hand(modern: Mcp, recorder: list[str]) -> None:
    """Everything before a question runs once per round; what comes after every question runs once."""
    first = result_of(modern, "asker", {}, capabilities=ELICITS)
    assert list(first["inputRequests"]) == ["elicit-1"]
    assert recorder == ["before"]
    second = result_of(
        modern,
        "asker",
        {},
        capabilities=ELICITS,
        state=first["requestState"],
        responses={"elicit-1": {"action": "accept", "content": {"name": "Ada"}}},
    )
    assert list(second["inputRequests"]) == ["elicit-2"]  # the first answer travels in the state
    assert recorder == ["before", "before", "between"]
    done = result_of(
        modern,
        "asker",
        {},
        capabilities=ELICITS,
        state=second["requestState"],
        responses={"elicit-2": {"action": "accept", "content": {"age": 36}}},
    )
    assert done["content"][0]["text"] == "Ada is 36"
    assert recorder == ["before", "before", "between", "before", "between", "after"]


def test_a_missing_answer_is_asked_again_and_unknown_answers_are_ignored(modern: Mcp, recorder: list[str]) -> None:
    """T-D1 (SHOULD): a retry without the needed answer gets the question again, not an error."""
    first = result_of(modern, "asker", {}, capabilities=ELICITS)
    again = result_of(
        modern,
        "asker",
        {},
        capabilities=ELICITS,
        state=first["requestState"],
        responses={"unrelated": {"action": "accept", "content": {"x": 1}}},
    )
    assert again["inputRequests"] == first["inputRequests"]
    assert "after" not in recorder


def test_malformed_answers_are_invalid_params(modern: Mcp) -> None:
    """T-D1 (SHOULD): an answer that is not an ElicitResult is a JSON-RPC error."""
    first = result_of(modern, "test_elicitation", {"message": "Who?"}, capabilities=ELICITS)
    status, message = call(
        modern,
        "test_elicitation",
        {"message": "Who?"},
        capabilities=ELICITS,
        state=first["requestState"],
        responses={"elicit-1": {"action": "maybe"}},
    )
    assert message["error"]["code"] == -32602
    assert "inputResponses['elicit-1'] is malformed" in message["error"]["message"]
    status, message = call(
        modern, "test_elicitation", {"message": "Who?"}, capabilities=ELICITS, state=first["requestState"], responses=[]
    )
    assert message["error"]["code"] == -32602


def test_an_accepted_form_must_fit_its_schema(modern: Mcp) -> None:
    first = result_of(modern, "test_elicitation", {"message": "Who?"}, capabilities=ELICITS)
    done = result_of(
        modern,
        "test_elicitation",
        {"message": "Who?"},
        capabilities=ELICITS,
        state=first["requestState"],
        responses={"elicit-1": {"action": "accept", "content": {"username": "ada"}}},
    )
    assert done["isError"] is True
    assert "'email' is a required property" in done["content"][0]["text"]


def _first_state(mcp: Mcp, user: str | None = None) -> str:
    result = result_of(mcp, "test_elicitation", {"message": "Who?"}, capabilities=ELICITS, user=user)
    return str(result["requestState"])


def _refusal(mcp: Mcp, state: Any, *, arguments: Any = None, name: str = "test_elicitation", user: Any = None) -> str:
    status, message = call(
        mcp,
        name,
        arguments or {"message": "Who?"},
        capabilities=ELICITS,
        state=state,
        responses={"elicit-1": ACCEPT_USER},
        user=user,
    )
    assert status == 200
    assert message["error"]["code"] == -32602, message
    return str(message["error"]["message"])


def test_an_altered_request_state_is_refused(modern: Mcp) -> None:
    """T-D2: integrity-protected; one changed character anywhere is refused."""
    state = _first_state(modern)
    for position in (0, len(state) // 2, len(state) - 1):
        flipped = "A" if state[position] != "A" else "B"
        altered = state[:position] + flipped + state[position + 1 :]
        assert "altered or not issued by this server" in _refusal(modern, altered)
    forged = signing.dumps({"v": 1, "p": "x", "t": "test_elicitation", "a": "x", "r": {}, "k": {}}, salt="other")
    assert "altered" in _refusal(modern, forged)
    assert "must be the string" in _refusal(modern, 42)


def test_an_expired_request_state_is_refused(modern: Mcp, monkeypatch: pytest.MonkeyPatch, settings: Any) -> None:
    """T-D2: a short expiry (REQUEST_STATE_TTL_SECONDS), checked on receipt."""
    issued = signing.TimestampSigner.timestamp

    monkeypatch.setattr(signing.TimestampSigner, "timestamp", lambda self: signing.b62_encode(1_000_000_000))
    old = _first_state(modern)
    monkeypatch.setattr(signing.TimestampSigner, "timestamp", issued)
    assert "requestState has expired; call the tool again" in _refusal(modern, old)
    fresh = _first_state(modern)
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "REQUEST_STATE_TTL_SECONDS": 1}
    monkeypatch.setattr("time.time", lambda: 2_000_000_000.0)
    assert "expired" in _refusal(modern, fresh)


def test_a_foreign_request_state_is_refused(modern: Mcp, header_auth: None) -> None:
    """T-D2: bound to the principal; bob cannot use alice's state."""
    state = _first_state(modern, user="alice")
    assert _refusal(modern, state, user="bob") == "requestState was issued to another caller"
    done = result_of(
        modern,
        "test_elicitation",
        {"message": "Who?"},
        capabilities=ELICITS,
        state=state,
        responses={"elicit-1": ACCEPT_USER},
        user="alice",
    )
    assert done["resultType"] == "complete"


def test_a_request_state_of_another_call_is_refused(modern: Mcp) -> None:
    """T-D2: bound to the tool and its arguments."""
    state = _first_state(modern)
    assert "belongs to another call" in _refusal(modern, state, arguments={"message": "Someone else?"})
    assert "belongs to another call" in _refusal(modern, state, name="test_elicitation_sep1034_defaults", arguments={})


def test_checkout_confirms_and_the_order_is_placed_once(modern: Mcp) -> None:
    """The basket demo: checkout asks, the retry places the order; a replayed retry finds no basket."""
    basket = result_of(modern, "create_basket", {})["structuredContent"]["basket_id"]
    result_of(modern, "add_item", {"basket_id": basket, "sku": "coffee", "quantity": 2})
    asked = result_of(modern, "checkout", {"basket_id": basket}, capabilities=ELICITS)
    question = asked["inputRequests"]["elicit-1"]["params"]
    assert question["message"] == "Place the order for 2 item(s), total 17.98 EUR?"
    assert McpHandle.objects.filter(pk=basket).exists()  # nothing happened before the answer
    yes = {"elicit-1": {"action": "accept", "content": {"confirm": True}}}
    done = result_of(
        modern, "checkout", {"basket_id": basket}, capabilities=ELICITS, state=asked["requestState"], responses=yes
    )
    assert done["structuredContent"]["ordered"] is True
    assert not McpHandle.objects.filter(pk=basket).exists()
    replayed = result_of(
        modern, "checkout", {"basket_id": basket}, capabilities=ELICITS, state=asked["requestState"], responses=yes
    )
    assert replayed["isError"] is True
    assert "Unknown basket" in replayed["content"][0]["text"]


def test_checkout_declined_keeps_the_basket(modern: Mcp) -> None:
    basket = result_of(modern, "create_basket", {})["structuredContent"]["basket_id"]
    result_of(modern, "add_item", {"basket_id": basket, "sku": "milk"})
    asked = result_of(modern, "checkout", {"basket_id": basket}, capabilities=ELICITS)
    for answer in ({"action": "decline"}, {"action": "accept", "content": {"confirm": False}}):
        done = result_of(
            modern,
            "checkout",
            {"basket_id": basket},
            capabilities=ELICITS,
            state=asked["requestState"],
            responses={"elicit-1": answer},
        )
        assert done["structuredContent"] == {"basket_id": basket, "ordered": False}
    assert McpHandle.objects.filter(pk=basket).exists()


def test_a_changed_question_is_asked_again(modern: Mcp) -> None:
    """An answer only counts for the question it answered: the basket changed, so confirm anew."""
    basket = result_of(modern, "create_basket", {})["structuredContent"]["basket_id"]
    result_of(modern, "add_item", {"basket_id": basket, "sku": "milk"})
    asked = result_of(modern, "checkout", {"basket_id": basket}, capabilities=ELICITS)
    result_of(modern, "add_item", {"basket_id": basket, "sku": "milk"})
    again = result_of(
        modern,
        "checkout",
        {"basket_id": basket},
        capabilities=ELICITS,
        state=asked["requestState"],
        responses={"elicit-1": {"action": "accept", "content": {"confirm": True}}},
    )
    assert again["resultType"] == "input_required"
    assert "2 item(s)" in again["inputRequests"]["elicit-1"]["params"]["message"]
    assert McpHandle.objects.filter(pk=basket).exists()


def test_the_conformance_forms_carry_defaults_and_every_enum_variant(modern: Mcp) -> None:
    defaults = result_of(modern, "test_elicitation_sep1034_defaults", {}, capabilities=ELICITS)
    fields = defaults["inputRequests"]["elicit-1"]["params"]["requestedSchema"]["properties"]
    assert {name: field["default"] for name, field in fields.items()} == {
        "name": "John Doe",
        "age": 30,
        "score": 95.5,
        "status": "active",
        "verified": True,
    }
    enums = result_of(modern, "test_elicitation_sep1330_enums", {}, capabilities=ELICITS)
    fields = enums["inputRequests"]["elicit-1"]["params"]["requestedSchema"]["properties"]
    assert fields["titledMulti"]["items"]["anyOf"][0] == {"const": "value1", "title": "First Choice"}
    answer = {
        "untitledSingle": "option1",
        "titledSingle": "value1",
        "legacyEnum": "opt1",
        "untitledMulti": ["option1", "option2"],
        "titledMulti": ["value1", "value2"],
    }
    done = result_of(
        modern,
        "test_elicitation_sep1330_enums",
        {},
        capabilities=ELICITS,
        state=enums["requestState"],
        responses={"elicit-1": {"action": "accept", "content": answer}},
    )
    assert done["content"][0]["text"].startswith("Elicitation completed: action=accept")


# --------------------------------------------------------------------------- legacy revisions


def test_a_legacy_client_without_the_capability_gets_a_clear_error_result(mcp: Mcp) -> None:
    """L-6: no elicitation/create to a client that did not declare elicitation: isError, no hang."""
    mcp.initialize("2025-11-25")
    result = mcp.call("tools/call", {"name": "test_elicitation", "arguments": {"message": "Who?"}})
    assert result["isError"] is True
    assert "did not declare the elicitation capability" in result["content"][0]["text"]
    result = mcp.call("tools/call", {"name": "test_sampling", "arguments": {"prompt": "Hi"}})
    assert "did not declare the sampling capability" in result["content"][0]["text"]


def test_2025_03_26_has_no_elicitation(mcp: Mcp) -> None:
    mcp.initialize("2025-03-26", capabilities={"elicitation": {}})
    result = mcp.call("tools/call", {"name": "test_elicitation", "arguments": {"message": "Who?"}})
    assert result["isError"] is True
    assert "protocol version 2025-03-26 has none" in result["content"][0]["text"]


def test_without_an_event_stream_the_call_cannot_ask(mcp: Mcp) -> None:
    mcp.initialize("2025-11-25", capabilities={"elicitation": {}})
    body = {
        "jsonrpc": "2.0",
        "id": 9,
        "method": "tools/call",
        "params": {"name": "test_elicitation", "arguments": {"message": "Who?"}},
    }
    _, messages = mcp.post(body, headers={"Accept": "application/json"})
    assert messages[0]["result"]["isError"] is True
    assert "Accept: text/event-stream" in messages[0]["result"]["content"][0]["text"]


def test_a_legacy_checkout_without_elicitation_places_the_order(mcp: Mcp) -> None:
    mcp.initialize("2025-06-18")
    basket = mcp.call("tools/call", {"name": "create_basket", "arguments": {}})["structuredContent"]["basket_id"]
    mcp.call("tools/call", {"name": "add_item", "arguments": {"basket_id": basket, "sku": "bread"}})
    done = mcp.call("tools/call", {"name": "checkout", "arguments": {"basket_id": basket}})
    assert done["structuredContent"]["ordered"] is True


@pytest.fixture
def session(mcp: Mcp) -> McpSession:
    mcp.initialize("2025-11-25", capabilities={"elicitation": {}, "sampling": {}})
    return McpSession.objects.get(pk=mcp.session_id)


FORM = {"message": "Who?", "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}}


def test_the_stream_asker_sends_the_request_and_reads_the_answer_from_the_database(session: McpSession) -> None:
    """The answer is handed over through an McpPendingInput row, whichever process took the POST."""
    sent: list[dict[str, Any]] = []

    def emit(data: bytes) -> None:  # the client answers as soon as it sees the request
        message = json.loads(data)
        sent.append(message)
        assert McpPendingInput.objects.filter(pk=message["id"], session_id=session.pk).exists()
        assert record_answer(
            session.pk, "anonymous", message["id"], {"action": "accept", "content": {"name": "A"}}, None
        )

    asker = StreamAsker("2025-11-25", session.pk, "anonymous", emit, lambda: False)
    assert asker.ask("elicitation/create", FORM, None) == {"action": "accept", "content": {"name": "A"}}
    assert sent[0]["method"] == "elicitation/create"
    assert sent[0]["params"] == {"mode": "form", **FORM}
    assert not McpPendingInput.objects.exists()  # the row goes with the call


def test_an_answer_is_taken_only_from_the_session_and_principal_that_were_asked(
    session: McpSession, settings: Any
) -> None:
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "INPUT_TIMEOUT_SECONDS": 0.2}
    asked: list[str] = []

    def emit(data: bytes) -> None:
        request_id = json.loads(data).get("id")
        if request_id is None:
            return  # the cancellation at the deadline
        asked.append(request_id)
        assert not record_answer("another-session", "anonymous", request_id, {"action": "decline"}, None)
        assert not record_answer(session.pk, "user:mallory", request_id, {"action": "decline"}, None)
        assert not record_answer(session.pk, "anonymous", 7, {"action": "decline"}, None)

    with pytest.raises(InputUnavailable, match="did not answer"):
        StreamAsker("2025-11-25", session.pk, "anonymous", emit, lambda: False).ask("elicitation/create", FORM, None)
    assert asked


def test_no_answer_in_time_cancels_the_request_and_ends_the_call_clearly(session: McpSession, settings: Any) -> None:
    """L-14: the server's own request times out, is cancelled, and the call ends with isError."""
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "INPUT_TIMEOUT_SECONDS": 0.2}
    sent: list[dict[str, Any]] = []
    asker = StreamAsker(
        "2025-11-25", session.pk, "anonymous", lambda data: sent.append(json.loads(data)), lambda: False
    )
    with pytest.raises(InputUnavailable) as info:
        asker.ask("sampling/createMessage", {"messages": [], "maxTokens": 5}, None)
    assert "did not answer a question to the client's model (sampling) within 0.2 seconds" in info.value.message
    assert sent[1] == {
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": sent[0]["id"], "reason": "No answer within 0.2 seconds."},
    }
    assert not McpPendingInput.objects.exists()


def test_at_most_half_the_handler_pool_waits_for_answers(session: McpSession, settings: Any) -> None:
    """Calls waiting for people never take every handler thread."""
    from mcp_tools.asking import stream

    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "HANDLER_POOL_SIZE": 2}
    refused: list[str] = []

    def emit(data: bytes) -> None:  # while the first call waits, a second one asks
        second = StreamAsker("2025-11-25", session.pk, "anonymous", lambda data: None, lambda: False)
        with pytest.raises(InputUnavailable) as info:
            second.ask("elicitation/create", FORM, None)
        refused.append(info.value.message)
        record_answer(session.pk, "anonymous", json.loads(data)["id"], {"action": "decline"}, None)

    first = StreamAsker("2025-11-25", session.pk, "anonymous", emit, lambda: False)
    assert first.ask("elicitation/create", FORM, None) == {"action": "decline"}
    assert "waiting for too many answers" in refused[0]
    assert stream._slots.taken == 0


def test_a_cancelled_call_stops_waiting(session: McpSession) -> None:
    asker = StreamAsker("2025-11-25", session.pk, "anonymous", lambda data: None, lambda: True)
    with pytest.raises(ToolCancelled):
        asker.ask("elicitation/create", FORM, None)


def test_an_error_answer_ends_the_call_clearly(session: McpSession) -> None:
    def emit(data: bytes) -> None:
        error = {"code": -1, "message": "User rejected the request"}
        record_answer(session.pk, "anonymous", json.loads(data)["id"], None, error)

    with pytest.raises(InputUnavailable, match="User rejected the request"):
        StreamAsker("2025-11-25", session.pk, "anonymous", emit, lambda: False).ask("elicitation/create", FORM, None)


def test_2025_06_18_forms_have_no_mode_and_no_multi_select(session: McpSession) -> None:
    McpSession.objects.filter(pk=session.pk).update(protocol_version="2025-06-18")
    sent: list[dict[str, Any]] = []

    def emit(data: bytes) -> None:
        sent.append(json.loads(data))
        record_answer(session.pk, "anonymous", sent[-1]["id"], {"action": "cancel"}, None)

    asker = StreamAsker("2025-06-18", session.pk, "anonymous", emit, lambda: False)
    assert asker.ask("elicitation/create", FORM, None) == {"action": "cancel"}
    assert "mode" not in sent[0]["params"]
    multi = {"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string", "enum": ["a"]}}}}
    with pytest.raises(InputUnavailable, match="multi-select"):
        asker.ask("elicitation/create", {"message": "Tags?", "requestedSchema": multi}, None)


def test_a_posted_response_reaches_the_pending_request(mcp: Mcp, session: McpSession) -> None:
    """The transport hands a legacy client's JSON-RPC response to the services: 202, row answered."""
    from datetime import timedelta

    from django.utils import timezone

    McpPendingInput.objects.create(
        id="mcp-tools-abc",
        session_id=session.pk,
        principal_key="anonymous",
        method="elicitation/create",
        expires_at=timezone.now() + timedelta(minutes=1),
    )
    response, _ = mcp.post({"jsonrpc": "2.0", "id": "mcp-tools-abc", "result": {"action": "decline"}})
    assert response.status_code == 202
    row = McpPendingInput.objects.get(pk="mcp-tools-abc")
    assert row.answer == {"action": "decline"}
    assert row.answered_at is not None
    response, _ = mcp.post({"jsonrpc": "2.0", "id": "unknown", "result": {}})
    assert response.status_code == 202


def test_invalid_forms_are_programming_errors(modern: Mcp) -> None:
    from mcp_tools.asking import ReplayAsker

    asker = ReplayAsker(ELICITS, MODERN, {})
    nested = {"type": "object", "properties": {"address": {"type": "object"}}}
    with pytest.raises(ValueError, match="field 'address'"):
        asker.ask("elicitation/create", {"message": "Where?", "requestedSchema": nested}, None)
    with pytest.raises(ValueError, match="ctx.elicit or ctx.sample"):
        asker.ask("roots/list", {}, None)


def test_an_answer_holding_nul_is_stored_and_an_id_holding_nul_is_nobodys(session: McpSession) -> None:
    # PostgreSQL refuses NUL in JSON and in a lookup: the answer (or the POST that carried it)
    # failed there. The answer's NUL is shown as U+FFFD, as in the session's client info.
    def emit(data: bytes) -> None:
        message = json.loads(data)
        assert not record_answer(session.pk, "anonymous", message["id"] + "\x00", {"action": "decline"}, None)
        answer = {"action": "accept", "content": {"name": "A\x00"}}
        assert record_answer(session.pk, "anonymous", message["id"], answer, None)

    asker = StreamAsker("2025-11-25", session.pk, "anonymous", emit, lambda: False)
    assert asker.ask("elicitation/create", FORM, None) == {"action": "accept", "content": {"name": "A\ufffd"}}
