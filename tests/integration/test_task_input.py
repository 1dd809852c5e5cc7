"""Tasks that ask: ``ctx.elicit`` / ``ctx.sample`` in a task's handler, run by the worker entry point.

The task waits in ``input_required`` (T11-7, T11-11, TX-6) while the client answers:
2025-11-25 through the request ``tasks/result`` sends on its SSE stream and a JSON-RPC response
POST; 2026-07-28 through ``tasks/get`` (``inputRequests``) and ``tasks/update``
(``inputResponses``, TX-7). Messages are published to Celery's in-memory broker and the test
runs ``execute`` itself; while the worker waits for the answer, ``asking.waiting.pause`` hands
control to the test, which plays the client through the view (one thread, no timing). The real
worker on Redis: tests/e2e/test_tasks_worker.py.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from mcp_tools.models import McpPendingInput, McpTask
from mcp_tools.tasking.worker import execute
from tests.support.mcp_client import Mcp, modern_meta

pytestmark = pytest.mark.django_db

EXT = "io.modelcontextprotocol/tasks"
RELATED = "io.modelcontextprotocol/related-task"
FORM = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
YES = {"action": "accept", "content": {"ok": True}}
ANSWER = {"role": "assistant", "content": {"type": "text", "text": "blue"}, "model": "m", "stopReason": "endTurn"}


@pytest.fixture(autouse=True)
def _queued_and_quick(settings: Any) -> Iterator[None]:
    """Messages wait in the in-memory broker; a forgotten answer cannot hang a test for long."""
    from project.celery import app

    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "INPUT_TIMEOUT_SECONDS": 5, "TASK_RESULT_WAIT_SECONDS": 2}
    app.conf.task_always_eager = False
    yield
    app.conf.task_always_eager = True


def _legacy(mcp: Mcp, capabilities: dict[str, Any]) -> Mcp:
    mcp.initialize("2025-11-25", capabilities=capabilities)
    return mcp


def _create(mcp: Mcp, name: str) -> str:
    return str(mcp.call("tools/call", {"name": name, "arguments": {}, "task": {}})["task"]["taskId"])


# --------------------------------------------------------------------------- 2025-11-25 core tasks


def test_a_task_that_asks_waits_in_input_required_and_completes_with_the_answer(
    mcp: Mcp, asking_tools: list[Any], client_turns: list[Callable[[], None]]
) -> None:
    """T11-11, T11-7, T11-14, T11-15: input_required while the worker waits; tasks/result sends
    the request (related-task _meta) on its stream; the POSTed answer resumes the task."""
    _legacy(mcp, {"elicitation": {}})
    task_id = _create(mcp, "task_confirm")
    seen: dict[str, Any] = {}

    def client() -> None:
        got = mcp.call("tasks/get", {"taskId": task_id})
        assert got["status"] == "input_required"
        assert got["statusMessage"] == "Waiting for the client to answer a question to the user (elicitation)."
        assert "inputRequests" not in got  # 2025-11-25 has no such field: tasks/result carries it
        response, final, sent = mcp.request("tasks/result", {"taskId": task_id})
        assert response["Content-Type"] == "text/event-stream"
        status, request = sent
        assert status["method"] == "notifications/tasks/status"
        assert status["params"]["taskId"] == task_id
        assert status["params"]["status"] == "input_required"
        assert RELATED not in status["params"].get("_meta", {})  # T11-14: SHOULD NOT
        assert request["method"] == "elicitation/create"
        assert request["params"]["mode"] == "form"
        assert request["params"]["message"] == "Export 3 files?"
        assert request["params"]["requestedSchema"] == FORM
        assert request["params"]["_meta"][RELATED] == {"taskId": task_id}
        # Nobody answered within TASK_RESULT_WAIT_SECONDS: the stream ends with "still waiting".
        assert final["error"]["code"] == -32603
        assert "still input_required" in final["error"]["message"]
        answered, _ = mcp.post({"jsonrpc": "2.0", "id": request["id"], "result": YES})
        assert answered.status_code == 202
        seen["request_id"] = request["id"]

    client_turns.append(client)
    assert execute(task_id) == "completed"
    assert asking_tools[0] == ("can", True, False)
    assert asking_tools[1].content == {"ok": True}
    assert asking_tools[2] == "working"  # T11-11: back to working once the answer is in
    got = mcp.call("tasks/get", {"taskId": task_id})
    assert got["status"] == "completed"
    assert got.get("statusMessage", "") == ""
    result = mcp.call("tasks/result", {"taskId": task_id})
    assert result["content"] == [{"type": "text", "text": "Exported."}]
    assert result["_meta"][RELATED] == {"taskId": task_id}
    assert not McpPendingInput.objects.exists()  # the request went with the answer


def test_a_tasks_result_stream_resends_an_unanswered_request(
    mcp: Mcp, asking_tools: list[Any], client_turns: list[Callable[[], None]]
) -> None:
    """T11-11: a client that left a tasks/result stream without answering gets the request again on its next."""
    _legacy(mcp, {"elicitation": {}})
    task_id = _create(mcp, "task_confirm")
    ids: list[str] = []

    def listen() -> None:
        _, _, sent = mcp.request("tasks/result", {"taskId": task_id})
        ids.extend(m["id"] for m in sent if "id" in m)

    def answer() -> None:
        mcp.post({"jsonrpc": "2.0", "id": ids[0], "result": {"action": "decline"}})

    client_turns.extend([listen, listen, answer])
    assert execute(task_id) == "completed"
    assert len(ids) == 2
    assert ids[0] == ids[1]
    assert mcp.call("tasks/result", {"taskId": task_id})["content"][0]["text"] == "Not exported."


def test_two_questions_number_their_keys_and_the_task_works_between_them(
    mcp: Mcp, asking_tools: list[Any], client_turns: list[Callable[[], None]]
) -> None:
    """T11-7: input_required -> working -> input_required -> working -> completed."""
    _legacy(mcp, {"elicitation": {}, "sampling": {}})
    task_id = _create(mcp, "task_interview")
    methods: list[str] = []

    def answer(result: dict[str, Any]) -> Callable[[], None]:
        def turn() -> None:
            _, _, sent = mcp.request("tasks/result", {"taskId": task_id})
            request = next(m for m in sent if "id" in m)
            methods.append(request["method"])
            mcp.post({"jsonrpc": "2.0", "id": request["id"], "result": result})

        return turn

    client_turns.extend([answer(YES), answer(ANSWER)])
    assert execute(task_id) == "completed"
    assert asking_tools == ["working", "working"]
    assert methods == ["elicitation/create", "sampling/createMessage"]
    assert mcp.call("tasks/result", {"taskId": task_id})["content"][0]["text"] == "accept, blue"
    assert McpTask.objects.get(pk=task_id).inputs_asked == 2


def test_a_client_that_cannot_answer_gets_an_error_result_never_a_hang(mcp: Mcp, asking_tools: list[Any]) -> None:
    """L-6: no elicitation declared at initialize: can_elicit is False, and asking fails the task at once."""
    _legacy(mcp, {"sampling": {}})
    task_id = _create(mcp, "task_confirm")
    assert execute(task_id) == "failed"
    assert asking_tools == [("can", False, True)]
    got = mcp.call("tasks/get", {"taskId": task_id})
    assert got["status"] == "failed"  # T11-17: an isError result fails a 2025-11-25 task
    assert "did not declare the elicitation capability" in got["statusMessage"]
    result = mcp.call("tasks/result", {"taskId": task_id})
    assert result["isError"] is True
    assert "did not declare the elicitation capability" in result["content"][0]["text"]
    assert not McpPendingInput.objects.exists()


def test_an_eager_task_cannot_ask_and_says_so_at_once(mcp: Mcp, asking_tools: list[Any]) -> None:
    """CELERY_TASK_ALWAYS_EAGER runs the task inside tools/call, before the client has its id: no
    question can be answered there, so asking ends the task at once instead of waiting."""
    from project.celery import app

    app.conf.task_always_eager = True
    _legacy(mcp, {"elicitation": {}})
    started = time.monotonic()
    task_id = _create(mcp, "task_confirm")
    assert time.monotonic() - started < 4  # INPUT_TIMEOUT_SECONDS is 5 here
    assert asking_tools == [("can", False, False)]
    got = mcp.call("tasks/get", {"taskId": task_id})
    assert got["status"] == "failed"
    assert "runs eagerly" in got["statusMessage"]


def test_no_answer_in_time_fails_the_task_with_a_clear_message(
    mcp: Mcp, asking_tools: list[Any], settings: Any
) -> None:
    """T11-17: INPUT_TIMEOUT_SECONDS without an answer: failed, with a diagnostic statusMessage."""
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "INPUT_TIMEOUT_SECONDS": 0.2}
    _legacy(mcp, {"elicitation": {}})
    task_id = _create(mcp, "task_confirm")
    assert execute(task_id) == "failed"
    got = mcp.call("tasks/get", {"taskId": task_id})
    assert got["status"] == "failed"
    assert got["statusMessage"] == (
        "The tool reported an error: The client did not answer a question to the user (elicitation) "
        "within 0.2 seconds; call the tool again to be asked again."
    )
    assert mcp.call("tasks/result", {"taskId": task_id})["isError"] is True
    assert not McpPendingInput.objects.exists()


def test_cancelling_a_task_that_waits_for_an_answer(
    mcp: Mcp, asking_tools: list[Any], client_turns: list[Callable[[], None]]
) -> None:
    """T11-13: input_required -> cancelled; the waiting handler stops and the task stays cancelled."""
    _legacy(mcp, {"elicitation": {}})
    task_id = _create(mcp, "task_confirm")
    client_turns.append(lambda: mcp.call("tasks/cancel", {"taskId": task_id}))
    assert execute(task_id) == "cancelled"
    assert len(asking_tools) == 1  # it never got an answer
    assert mcp.call("tasks/get", {"taskId": task_id})["status"] == "cancelled"
    assert not McpPendingInput.objects.exists()


def test_only_the_task_owner_answers_from_any_of_its_sessions(
    client: Any, demo_tools: None, header_auth: None, asking_tools: list[Any], client_turns: list[Callable[[], None]]
) -> None:
    """T11-16: another principal's answer is ignored; the owner's answer counts from another session."""
    alice, other_alice, bob = Mcp(client), Mcp(client), Mcp(client)
    for mcp, user in ((alice, "alice"), (other_alice, "alice"), (bob, "bob")):
        mcp.default_headers = {"X-Test-User": user}
        _legacy(mcp, {"elicitation": {}})
    task_id = _create(alice, "task_confirm")

    def client_side() -> None:
        request = next(m for m in alice.request("tasks/result", {"taskId": task_id})[2] if "id" in m)
        assert bob.request("tasks/result", {"taskId": task_id})[1]["error"]["code"] == -32602
        bob.post({"jsonrpc": "2.0", "id": request["id"], "result": {"action": "decline"}})
        assert not McpPendingInput.objects.filter(answered_at__isnull=False).exists()
        other_alice.post({"jsonrpc": "2.0", "id": request["id"], "result": YES})

    client_turns.append(client_side)
    assert execute(task_id) == "completed"
    assert alice.call("tasks/result", {"taskId": task_id})["content"][0]["text"] == "Exported."


def test_a_plain_tasks_result_stays_json_while_the_task_works(mcp: Mcp, asking_tools: list[Any]) -> None:
    """T11-10: only a task with something to send turns tasks/result into a stream."""
    _legacy(mcp, {"elicitation": {}})
    task_id = _create(mcp, "task_confirm")
    response, final, sent = mcp.request("tasks/result", {"taskId": task_id})
    assert response["Content-Type"] == "application/json"
    assert sent == []
    assert "still working" in final["error"]["message"]


def test_a_json_only_tasks_result_sends_no_request_and_just_waits(
    mcp: Mcp, asking_tools: list[Any], client_turns: list[Callable[[], None]]
) -> None:
    """T11-10: without Accept: text/event-stream there is no stream to ask on; the request stays pending."""
    _legacy(mcp, {"elicitation": {}})
    task_id = _create(mcp, "task_confirm")
    seen: list[Any] = []

    def client() -> None:
        body = {"jsonrpc": "2.0", "id": 99, "method": "tasks/result", "params": {"taskId": task_id}}
        response, messages = mcp.post(body, headers={"Accept": "application/json"}, method="tasks/result")
        seen.extend([response["Content-Type"], messages])
        pending = McpPendingInput.objects.get(task_id=task_id)
        mcp.post({"jsonrpc": "2.0", "id": pending.pk, "result": YES})

    client_turns.append(client)
    assert execute(task_id) == "completed"
    content_type, messages = seen
    assert content_type == "application/json"
    assert [m["error"]["code"] for m in messages] == [-32603]
    assert "still input_required" in messages[0]["error"]["message"]


def test_what_a_tasks_result_stream_sends_at_each_look(mcp: Mcp, asking_tools: list[Any]) -> None:
    """T11-14: a status notification for each change the stream sees (none for a first look at a
    working task); T11-11/T11-15: each request once per stream, with related-task _meta."""
    import json

    from mcp_tools.tasking import ResultWatch, StillWorking
    from mcp_tools.tasking.service import terminal_or_wait
    from tests.support.mcp_client import check_message

    _legacy(mcp, {"elicitation": {}})
    task_id = _create(mcp, "task_confirm")
    watch = ResultWatch()

    def look() -> list[dict[str, Any]]:
        with pytest.raises(StillWorking) as pending:
            terminal_or_wait(McpTask.objects.get(pk=task_id), time.monotonic() + 60, watch)
        messages = [json.loads(m) for m in pending.value.messages]
        for message in messages:
            check_message("2025-11-25", message)
        return messages

    assert look() == []  # working, first look: a plain tasks/result stays plain
    McpTask.objects.filter(pk=task_id).update(status="input_required")
    _waiting_request(task_id, "mcp-tools-one")
    status, request = look()
    assert (status["method"], status["params"]["status"]) == ("notifications/tasks/status", "input_required")
    assert (request["id"], request["params"]["_meta"][RELATED]) == ("mcp-tools-one", {"taskId": task_id})
    assert look() == []  # nothing new
    _waiting_request(task_id, "mcp-tools-two")
    assert [m["id"] for m in look()] == ["mcp-tools-two"]
    McpTask.objects.filter(pk=task_id).update(status="working")
    McpPendingInput.objects.all().delete()
    (working,) = look()
    assert (working["method"], working["params"]["status"]) == ("notifications/tasks/status", "working")
    assert look() == []


def _waiting_request(task_id: str, request_id: str) -> None:
    McpPendingInput.objects.create(
        id=request_id,
        task_id=task_id,
        key=f"elicit-{request_id}",
        principal_key="anonymous",
        method="elicitation/create",
        params={"mode": "form", "message": "Export 3 files?", "requestedSchema": FORM},
        expires_at=timezone.now() + timedelta(minutes=5),
    )


# --------------------------------------------------------------------------- heartbeats and lost workers


def _waiting_task(mcp: Mcp, beat_seconds_ago: float) -> tuple[str, str]:
    """A task whose attempt 1 waits in input_required for its request, last beat that long ago."""
    task_id = _create(mcp, "task_confirm")
    beat = timezone.now() - timedelta(seconds=beat_seconds_ago)
    McpTask.objects.filter(pk=task_id).update(
        status="input_required", attempts=1, started_at=beat, heartbeat_at=beat, inputs_asked=1
    )
    _waiting_request(task_id, "mcp-tools-lost")
    return task_id, McpTask.objects.get(pk=task_id).celery_id


def test_a_task_waiting_for_input_is_not_lost_while_its_worker_beats(mcp: Mcp, asking_tools: list[Any]) -> None:
    """Neither the sweep nor tasks/get (recovery on read) touches an input_required task with a fresh heartbeat."""
    from mcp_tools.tasks import sweep_lost_tasks

    _legacy(mcp, {"elicitation": {}})
    task_id, celery_id = _waiting_task(mcp, beat_seconds_ago=1)
    assert sweep_lost_tasks() == 0
    assert mcp.call("tasks/get", {"taskId": task_id})["status"] == "input_required"  # recovery on read too
    row = McpTask.objects.get(pk=task_id)
    assert (row.status, row.celery_id) == ("input_required", celery_id)
    assert McpPendingInput.objects.filter(task_id=task_id).exists()
    assert execute(task_id, celery_id) == "running"  # a redelivery while it beats does nothing


@pytest.mark.parametrize("how", ["sweep", "tasks/get"])
def test_a_task_whose_worker_died_waiting_for_input_is_queued_again_and_asks_anew(
    mcp: Mcp, asking_tools: list[Any], client_turns: list[Callable[[], None]], how: str
) -> None:
    """A stale heartbeat in input_required: working again, its request withdrawn; the next run asks
    again under a new key (TX-7: never reused) and completes."""
    from mcp_tools.tasks import sweep_lost_tasks

    _legacy(mcp, {"elicitation": {}})
    task_id, old_message = _waiting_task(mcp, beat_seconds_ago=120)
    if how == "sweep":
        assert sweep_lost_tasks() == 1
    else:
        assert mcp.call("tasks/get", {"taskId": task_id})["status"] == "working"
    row = McpTask.objects.get(pk=task_id)
    assert row.status == "working"
    assert "queued again" in row.status_message
    assert not McpPendingInput.objects.filter(task_id=task_id).exists()
    keys: list[str] = []

    def answer() -> None:
        pending = McpPendingInput.objects.get(task_id=task_id)
        keys.append(pending.key)
        mcp.post({"jsonrpc": "2.0", "id": pending.pk, "result": YES})

    client_turns.append(answer)
    assert execute(task_id, old_message) == "superseded"
    assert execute(task_id, row.celery_id) == "completed"
    assert keys == ["elicit-2"]


def test_a_redelivered_message_of_a_task_lost_in_input_required_starts_over_working(
    mcp: Mcp, asking_tools: list[Any], client_turns: list[Callable[[], None]]
) -> None:
    """acks_late redelivery (no sweep in between): the new attempt withdraws the old request."""
    _legacy(mcp, {"elicitation": {}})
    task_id, celery_id = _waiting_task(mcp, beat_seconds_ago=120)
    statuses: list[str] = []

    def answer() -> None:
        pending = McpPendingInput.objects.get(task_id=task_id)
        assert pending.pk != "mcp-tools-lost"
        statuses.append(McpTask.objects.get(pk=task_id).status)
        mcp.post({"jsonrpc": "2.0", "id": pending.pk, "result": YES})

    client_turns.append(answer)
    assert execute(task_id, celery_id) == "completed"
    assert statuses == ["input_required"]
    assert McpTask.objects.get(pk=task_id).attempts == 2


# --------------------------------------------------------------------------- 2026-07-28 extension


def _ext_meta(capabilities: dict[str, Any]) -> dict[str, Any]:
    declared = {"extensions": {EXT: {}}, **capabilities}
    return modern_meta(**{"io.modelcontextprotocol/clientCapabilities": declared})


def _ext_create(mcp: Mcp, name: str, capabilities: dict[str, Any]) -> str:
    created = mcp.call("tools/call", {"name": name, "arguments": {}, "_meta": _ext_meta(capabilities)})
    assert created["resultType"] == "task"
    return str(created["taskId"])


def test_extension_task_shows_input_requests_and_tasks_update_resumes_it(
    mcp: Mcp, asking_tools: list[Any], client_turns: list[Callable[[], None]]
) -> None:
    """TX-6: tasks/get shows every outstanding request under its key; TX-7: tasks/update answers
    it (unknown keys ignored, malformed answers -32602), acknowledged with resultType complete."""
    mcp.modern()
    caps = {"elicitation": {}, "sampling": {}}
    task_id = _ext_create(mcp, "task_interview", caps)
    meta = _ext_meta(caps)

    def get() -> dict[str, Any]:
        return mcp.call("tasks/get", {"taskId": task_id, "_meta": meta})

    def update(responses: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        response, message, _ = mcp.request(
            "tasks/update", {"taskId": task_id, "inputResponses": responses, "_meta": meta}
        )
        return response, message

    def first() -> None:
        got = get()
        assert got["resultType"] == "complete"
        assert got["status"] == "input_required"
        assert got["inputRequests"] == {
            "proceed-1": {
                "method": "elicitation/create",
                "params": {"mode": "form", "message": "Proceed?", "requestedSchema": FORM},
            }
        }
        # A key that is not outstanding is ignored; the task still waits.
        _, ack = update({"elicit-9": YES})
        assert ack["result"]["resultType"] == "complete"
        assert get()["status"] == "input_required"
        _, refused = update({"proceed-1": {"action": "maybe"}})
        assert refused["error"]["code"] == -32602
        assert "inputResponses['proceed-1'] is malformed" in refused["error"]["message"]
        assert get()["inputRequests"].keys() == {"proceed-1"}
        response, ack = update({"proceed-1": YES})
        assert response.status_code == 200
        assert ack["result"]["resultType"] == "complete"

    def second() -> None:
        got = get()
        assert list(got["inputRequests"]) == ["sample-2"]  # numbered over the task's life
        assert got["inputRequests"]["sample-2"]["method"] == "sampling/createMessage"
        update({"sample-2": ANSWER, "proceed-1": {"action": "decline"}})  # the old key: ignored

    client_turns.extend([first, second])
    assert execute(task_id) == "completed"
    assert asking_tools == ["working", "working"]  # after each answer (eventually consistent, TX-7)
    done = get()
    assert done["status"] == "completed"
    assert "inputRequests" not in done
    assert done["result"]["content"][0]["text"] == "accept, blue"


def test_extension_client_without_the_capability_completes_with_an_error_result(
    mcp: Mcp, asking_tools: list[Any]
) -> None:
    """TX-9: the handler's question cannot be asked: an isError result completes the task."""
    mcp.modern()
    task_id = _ext_create(mcp, "task_confirm", {})
    assert execute(task_id) == "completed"
    assert asking_tools == [("can", False, False)]
    got = mcp.call("tasks/get", {"taskId": task_id, "_meta": _ext_meta({})})
    assert got["status"] == "completed"
    assert got["result"]["isError"] is True
    assert "did not declare the elicitation capability" in got["result"]["content"][0]["text"]


def test_extension_no_answer_in_time_completes_with_an_error_result(
    mcp: Mcp, asking_tools: list[Any], settings: Any
) -> None:
    """TX-9: the timeout's isError result completes an extension task."""
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "INPUT_TIMEOUT_SECONDS": 0.2}
    mcp.modern()
    task_id = _ext_create(mcp, "task_confirm", {"elicitation": {}})
    assert execute(task_id) == "completed"
    got = mcp.call("tasks/get", {"taskId": task_id, "_meta": _ext_meta({})})
    assert got["result"]["isError"] is True
    assert "within 0.2 seconds" in got["result"]["content"][0]["text"]


def test_extension_update_of_another_principals_task_is_unknown(
    client: Any, demo_tools: None, header_auth: None, asking_tools: list[Any], client_turns: list[Callable[[], None]]
) -> None:
    """TX-13: bob's tasks/update of alice's task answers like an unknown task and stores nothing."""
    alice, bob = Mcp(client).modern(), Mcp(client).modern()
    alice.default_headers, bob.default_headers = {"X-Test-User": "alice"}, {"X-Test-User": "bob"}
    caps = {"elicitation": {}}
    task_id = _ext_create(alice, "task_confirm", caps)
    meta = _ext_meta(caps)

    def turn() -> None:
        _, foreign, _ = bob.request(
            "tasks/update", {"taskId": task_id, "inputResponses": {"elicit-1": YES}, "_meta": meta}
        )
        assert foreign["error"]["code"] == -32602
        assert not McpPendingInput.objects.filter(answered_at__isnull=False).exists()
        alice.call(
            "tasks/update", {"taskId": task_id, "inputResponses": {"elicit-1": {"action": "decline"}}, "_meta": meta}
        )

    client_turns.append(turn)
    assert execute(task_id) == "completed"
    got = alice.call("tasks/get", {"taskId": task_id, "_meta": meta})
    assert got["result"]["content"][0]["text"] == "Not exported."
