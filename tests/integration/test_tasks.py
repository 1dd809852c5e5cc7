"""Tasks through the view: 2025-11-25 core tasks and the 2026-07-28 tasks extension.

Task-augmented calls run in-process here (Celery eager mode, tests/settings.py); tests that
need a task to stay ``working`` switch eager off so the message waits in Celery's in-memory
broker, then run the worker entry point (``execute``) themselves. The real worker on Redis is
exercised in tests/e2e/test_tasks_worker.py.
"""

from __future__ import annotations

import io
from datetime import timedelta
from typing import Any

import pytest
from django.core.management import call_command
from django.utils import timezone

from mcp_tools.models import AuditEvent, McpTask, Tool
from mcp_tools.models.task_rows import sources_of
from mcp_tools.protocol import task_wire as wire
from mcp_tools.tasking.worker import WORKER_LOST_MESSAGE, execute
from tests.support.mcp_client import Mcp, modern_meta

pytestmark = pytest.mark.django_db

EXT = "io.modelcontextprotocol/tasks"
RELATED = "io.modelcontextprotocol/related-task"


def ext_meta() -> dict[str, Any]:
    return modern_meta(**{"io.modelcontextprotocol/clientCapabilities": {"extensions": {EXT: {}}}})


@pytest.fixture
def mcp11(mcp: Mcp) -> Mcp:
    mcp.initialize("2025-11-25")
    return mcp


def _tool(name: str, handler: str, support: str, **extra: Any) -> Tool:
    tool = Tool(name=name, handler_key=handler, task_support=support, **extra)
    tool.full_clean()
    tool.save()
    return tool


def _create(mcp: Mcp, name: str = "build_report", arguments: dict[str, Any] | None = None, **task: Any) -> str:
    result = mcp.call(
        "tools/call", {"name": name, "arguments": {"steps": 1} if arguments is None else arguments, "task": task}
    )
    return str(result["task"]["taskId"])


# --------------------------------------------------------------------------- 2025-11-25


def test_capabilities_and_tool_execution_are_advertised_on_2025_11_25(mcp11: Mcp) -> None:
    """T11-1, T-16: tasks capability, and execution.taskSupport on optional/required tools only."""
    mcp = Mcp(mcp11.client)
    init = mcp.initialize("2025-11-25")
    assert init["capabilities"]["tasks"] == {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
    tools = {t["name"]: t for t in mcp.call("tools/list")["tools"]}
    assert tools["build_report"]["execution"] == {"taskSupport": "optional"}
    assert tools["export_archive"]["execution"] == {"taskSupport": "required"}
    assert "execution" not in tools["echo"]


def test_older_revisions_have_no_tasks(mcp: Mcp) -> None:
    """T11-2, TX-12: 2025-06-18 has no tasks capability, ignores params.task, and has no tasks/* methods."""
    init = mcp.initialize("2025-06-18")
    assert "tasks" not in init["capabilities"]
    result = mcp.call("tools/call", {"name": "echo", "arguments": {"text": "hi"}, "task": {"ttl": 1000}})
    assert result["content"][0]["text"] == "hi"
    _, message, _ = mcp.request("tasks/get", {"taskId": "x"})
    assert message["error"]["code"] == -32601
    assert not McpTask.objects.exists()


def test_task_lifecycle_create_get_result_list(mcp11: Mcp) -> None:
    """T11-5, T11-8, T11-9, T11-10, T11-12: create, poll, fetch with related-task meta, list."""
    created = mcp11.call("tools/call", {"name": "build_report", "arguments": {"steps": 2}, "task": {"ttl": 60_000}})
    task = created["task"]
    assert task["status"] == "working"
    assert task["ttl"] == 60_000
    assert task["pollInterval"] == 1000
    assert task["createdAt"].endswith("Z")
    assert task["lastUpdatedAt"]
    row = McpTask.objects.get(pk=task["taskId"])
    assert row.status == "completed"
    assert row.tool_name == "build_report"
    assert row.arguments == {"steps": 2}
    got = mcp11.call("tasks/get", {"taskId": task["taskId"]})
    assert got["status"] == "completed"
    assert got["taskId"] == task["taskId"]
    assert "task" not in got  # T11-9: no wrapper
    result = mcp11.call("tasks/result", {"taskId": task["taskId"]})
    assert result["content"][0]["text"] == "Report ready after 2 steps."
    assert result["structuredContent"] == {"steps": 2}
    assert result["_meta"][RELATED] == {"taskId": task["taskId"]}
    # The audit trail records the task-creating call as a success.
    audit = AuditEvent.objects.get(tool_name="build_report")
    assert (audit.outcome, audit.detail) == ("ok", "task created")
    listed = mcp11.call("tasks/list")
    assert [t["taskId"] for t in listed["tasks"]] == [task["taskId"]]


def test_ttl_is_capped_and_defaulted(mcp11: Mcp, settings: Any) -> None:
    """T11-8: the server reports the effective ttl; the cap is TASK_TTL_MAX_MS."""
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "TASK_TTL_MAX_MS": 120_000, "TASK_TTL_DEFAULT_MS": 30_000}
    capped = mcp11.call("tools/call", {"name": "noop", "task": {"ttl": 10**12}})
    assert capped["task"]["ttl"] == 120_000
    default = mcp11.call("tools/call", {"name": "noop", "task": {}})
    assert default["task"]["ttl"] == 30_000


@pytest.mark.parametrize("task", ["yes", {"ttl": -1}, {"ttl": "10"}])
def test_malformed_task_param_is_invalid_params(mcp11: Mcp, task: Any) -> None:
    _, message, _ = mcp11.request("tools/call", {"name": "noop", "task": task})
    assert message["error"]["code"] == -32602
    assert not McpTask.objects.exists()


def test_task_support_forbidden_and_required_answer_32601(mcp11: Mcp) -> None:
    """T11-3: task on a forbidden tool; T11-4: a required tool without task (we chose -32601)."""
    _, message, _ = mcp11.request("tools/call", {"name": "echo", "arguments": {"text": "x"}, "task": {}})
    assert message["error"]["code"] == -32601
    _, message, _ = mcp11.request("tools/call", {"name": "export_archive", "arguments": {"steps": 1}})
    assert message["error"]["code"] == -32601
    assert not McpTask.objects.exists()


def test_is_error_result_fails_a_core_task_and_result_returns_it(mcp11: Mcp) -> None:
    """T11-17: an isError result makes the 2025-11-25 task failed; tasks/result returns the result."""
    _tool("failing", "demo.fail", "optional", handler_config={"message": "nope"})
    task_id = _create(mcp11, "failing", {})
    got = mcp11.call("tasks/get", {"taskId": task_id})
    assert got["status"] == "failed"
    assert got["statusMessage"]
    result = mcp11.call("tasks/result", {"taskId": task_id})
    assert result["isError"] is True
    assert result["content"][0]["text"] == "nope"


def test_crash_never_leaks_internals(mcp11: Mcp) -> None:
    _tool("crashing", "demo.crash", "optional")
    task_id = _create(mcp11, "crashing", {})
    result = mcp11.call("tasks/result", {"taskId": task_id})
    assert result["isError"] is True
    assert "hunter2" not in result["content"][0]["text"]


def test_result_over_the_limit_fails_clearly(mcp11: Mcp, settings: Any) -> None:
    """A result larger than TASK_RESULT_MAX_BYTES fails the task with a JSON-RPC error that says so."""
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "TASK_RESULT_MAX_BYTES": 64}
    task_id = _create(mcp11, "build_report", {"steps": 1})
    got = mcp11.call("tasks/get", {"taskId": task_id})
    assert got["status"] == "failed"
    assert "64-byte limit" in got["statusMessage"]
    _, message, _ = mcp11.request("tasks/result", {"taskId": task_id})
    assert message["error"]["code"] == -32603
    assert "limit" in message["error"]["message"]


def test_broker_outage_gives_a_clear_error_and_no_row(mcp11: Mcp, monkeypatch: pytest.MonkeyPatch) -> None:
    """Fault injection: the broker refuses the message; no orphan row is left."""
    from kombu.exceptions import OperationalError

    from mcp_tools import tasks

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise OperationalError("Error 111 connecting to 127.0.0.1:1. Connection refused.")

    monkeypatch.setattr(tasks.run_task, "apply_async", refuse)
    _, message, _ = mcp11.request("tools/call", {"name": "noop", "task": {}})
    assert message["error"]["code"] == -32603
    assert "task queue is unavailable" in message["error"]["message"]
    assert "127.0.0.1" not in message["error"]["message"]
    assert not McpTask.objects.exists()


def test_celery_missing_at_enqueue_gives_a_clear_error_and_no_row(mcp11: Mcp, monkeypatch: pytest.MonkeyPatch) -> None:
    """Celery is an optional extra: if its module cannot be imported, no orphan row is left."""
    import sys

    monkeypatch.setitem(sys.modules, "mcp_tools.tasking.jobs", None)  # import now raises ImportError
    _, message, _ = mcp11.request("tools/call", {"name": "noop", "task": {}})
    assert message["error"]["code"] == -32603
    assert "task queue is unavailable" in message["error"]["message"]
    assert not McpTask.objects.exists()


def test_without_celery_tasks_are_not_advertised(monkeypatch: pytest.MonkeyPatch) -> None:
    from mcp_tools import tasking

    monkeypatch.setattr(tasking, "_celery_installed", lambda: False)
    assert tasking.tasks_enabled() is False


def test_cancel_a_working_task_and_it_stays_cancelled(mcp11: Mcp, queued: None) -> None:
    """T11-13, T11-7: cancel sets cancelled before replying; a later worker run cannot complete it."""
    task_id = _create(mcp11, "build_report", {"steps": 1})
    assert mcp11.call("tasks/get", {"taskId": task_id})["status"] == "working"
    cancelled = mcp11.call("tasks/cancel", {"taskId": task_id})
    assert cancelled["status"] == "cancelled"
    assert cancelled["taskId"] == task_id
    assert execute(task_id) == "cancelled"  # the worker picks the message up afterwards
    assert mcp11.call("tasks/get", {"taskId": task_id})["status"] == "cancelled"
    _, message, _ = mcp11.request("tasks/cancel", {"taskId": task_id})
    assert message["error"]["code"] == -32602
    _, message, _ = mcp11.request("tasks/result", {"taskId": task_id})
    assert message["error"]["code"] == -32602


def test_cancel_a_completed_task_is_invalid_params(mcp11: Mcp) -> None:
    task_id = _create(mcp11, "noop", {})
    _, message, _ = mcp11.request("tasks/cancel", {"taskId": task_id})
    assert message["error"]["code"] == -32602
    assert McpTask.objects.get(pk=task_id).status == "completed"


def test_list_paginates_newest_first(mcp11: Mcp, settings: Any) -> None:
    """T11-12: newest first, nextCursor while more exist; an invalid cursor is -32602. T11-6: unique ids."""
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "PAGE_SIZE": 2}
    ids = [_create(mcp11, "noop", {}) for _ in range(5)]
    # T11-6: server-generated string ids, all distinct, long enough to be unguessable (T11-16).
    assert len(set(ids)) == len(ids)
    assert all(isinstance(task_id, str) and len(task_id) >= 22 for task_id in ids)
    seen: list[str] = []
    cursor = None
    while True:
        page = mcp11.call("tasks/list", {"cursor": cursor} if cursor else {})
        assert len(page["tasks"]) <= 2
        seen += [t["taskId"] for t in page["tasks"]]
        cursor = page.get("nextCursor")
        if not cursor:
            break
    assert seen == ids[::-1]
    _, message, _ = mcp11.request("tasks/list", {"cursor": "forged"})
    assert message["error"]["code"] == -32602


def test_other_principal_cannot_get_result_cancel_or_list(client: Any, demo_tools: None, header_auth: None) -> None:
    """T11-16, TX-13: another token's task id answers exactly like an unknown id."""
    alice = Mcp(client)
    alice_headers = {"X-Test-User": "alice"}
    bob_headers = {"X-Test-User": "bob"}

    def call(mcp: Mcp, method: str, params: dict[str, Any], headers: dict[str, str]) -> dict[str, Any]:
        return mcp.request(method, params, headers=headers)[1]

    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "a", "version": "1"}},
    }
    response, _ = alice.post(body, headers=alice_headers, validate=False)
    alice.session_id, alice.version = response.headers["Mcp-Session-Id"], "2025-11-25"
    bob = Mcp(client)
    response, _ = bob.post(body, headers=bob_headers, validate=False)
    bob.session_id, bob.version = response.headers["Mcp-Session-Id"], "2025-11-25"

    created = call(alice, "tools/call", {"name": "noop", "task": {}}, alice_headers)
    task_id = created["result"]["task"]["taskId"]
    unknown = "x" * len(task_id)
    for method in ("tasks/get", "tasks/result", "tasks/cancel"):
        foreign = call(bob, method, {"taskId": task_id}, bob_headers)
        missing = call(bob, method, {"taskId": unknown}, bob_headers)
        assert foreign["error"] == missing["error"], method
        assert foreign["error"]["code"] == -32602
    assert call(bob, "tasks/list", {}, bob_headers)["result"]["tasks"] == []
    assert call(alice, "tasks/get", {"taskId": task_id}, alice_headers)["result"]["status"] == "completed"
    assert McpTask.objects.get(pk=task_id).status == "completed"


def test_expired_task_is_unknown_and_purged(mcp11: Mcp) -> None:
    """T11-8/T11-9: past its ttl a task answers -32602; mcp_purge_tasks deletes it in batches."""
    keep = _create(mcp11, "noop", {})
    gone = _create(mcp11, "noop", {})
    McpTask.objects.filter(pk=gone).update(expires_at=timezone.now() - timedelta(seconds=1))
    _, message, _ = mcp11.request("tasks/get", {"taskId": gone})
    assert message["error"]["code"] == -32602
    assert [t["taskId"] for t in mcp11.call("tasks/list")["tasks"]] == [keep]
    out = io.StringIO()
    call_command("mcp_purge_tasks", "--batch-size", "1", stdout=out)
    assert "Deleted 1 expired task" in out.getvalue()
    assert list(McpTask.objects.values_list("pk", flat=True)) == [keep]


def test_purge_beat_task(mcp11: Mcp) -> None:
    from mcp_tools.tasks import purge_expired_tasks

    gone = _create(mcp11, "noop", {})
    McpTask.objects.filter(pk=gone).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert purge_expired_tasks.delay().get() == 1
    assert not McpTask.objects.exists()


# --------------------------------------------------------------------------- worker entry point


def test_status_transitions_only_move_forward(mcp11: Mcp) -> None:
    """T11-7: completed never goes back to working; cancelled never becomes completed."""
    task_id = _create(mcp11, "noop", {})
    assert not McpTask.objects.move(task_id, wire.WORKING)
    assert not McpTask.objects.move(task_id, wire.CANCELLED)
    assert McpTask.objects.get(pk=task_id).status == "completed"
    # The legal sources of each status, which move() uses in its conditional UPDATE.
    assert "working" in sources_of("completed")
    assert "input_required" in sources_of("working")
    assert not any(t in sources_of(s) for t in wire.TERMINAL for s in wire.STATUSES)


@pytest.mark.parametrize(
    ("policy", "attempts", "expected"), [("retry", 1, "completed"), ("fail", 1, "failed"), ("retry", 3, "failed")]
)
def test_redelivery_after_worker_loss(
    mcp11: Mcp, queued: None, settings: Any, policy: str, attempts: int, expected: str
) -> None:
    """A message redelivered after its worker died is retried or failed, per TASK_WORKER_LOST."""
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "TASK_WORKER_LOST": policy, "TASK_MAX_ATTEMPTS": 3}
    task_id = _create(mcp11, "noop", {})
    # A previous run never finished: it started a minute ago and its heartbeat stopped then.
    long_ago = timezone.now() - timedelta(seconds=60)
    McpTask.objects.filter(pk=task_id).update(attempts=attempts, started_at=long_ago, heartbeat_at=long_ago)
    assert execute(task_id) == expected
    row = McpTask.objects.get(pk=task_id)
    assert row.status == expected
    if expected == "failed":
        assert row.error_message == WORKER_LOST_MESSAGE
        _, message, _ = mcp11.request("tasks/result", {"taskId": task_id})
        assert message["error"] == {"code": -32603, "message": WORKER_LOST_MESSAGE}
    else:
        assert row.attempts == attempts + 1


def test_deleted_tool_fails_the_task(mcp11: Mcp, queued: None) -> None:
    task_id = _create(mcp11, "noop", {})
    Tool.objects.filter(name="noop").update(enabled=False)
    assert execute(task_id) == "failed"
    _, message, _ = mcp11.request("tasks/result", {"taskId": task_id})
    assert message["error"]["code"] == -32602


def test_progress_becomes_the_status_message(mcp11: Mcp, queued: None) -> None:
    """P-3: a task's progress shows as its statusMessage while it runs, and is cleared at the end."""
    from mcp_tools.registry import ToolKind, registry

    seen: list[str] = []

    def steps(ctx: Any) -> str:
        ctx.report_progress(1, 2, "half way")
        seen.append(McpTask.objects.get(tool_name="stepper").status_message)
        ctx.report_progress(2, 2)
        seen.append(McpTask.objects.get(tool_name="stepper").status_message)
        return "done"

    registry.register(ToolKind("test.steps", steps, label="Steps"))
    try:
        _tool("stepper", "test.steps", "optional")
        task_id = _create(mcp11, "stepper", {})
        assert execute(task_id) == "completed"
    finally:
        registry.unregister("test.steps")
    assert seen == ["half way", "2 of 2"]
    assert McpTask.objects.get(pk=task_id).status_message == ""


def test_quick_progress_reports_update_the_task_row_rarely(mcp11: Mcp, queued: None, settings: Any) -> None:
    """A task's progress is written to its row at most every CANCEL_POLL_SECONDS, and at the final step."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from mcp_tools.registry import ToolKind, registry

    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "CANCEL_POLL_SECONDS": 60}
    updates: list[str] = []
    seen: list[str] = []

    def chatty(ctx: Any) -> str:
        with CaptureQueriesContext(connection) as queries:
            for step in range(1, 101):
                ctx.report_progress(step, 100)
                if step in (1, 99, 100):
                    seen.append(McpTask.objects.get(tool_name="chatty").status_message)
        updates.extend(q["sql"] for q in queries.captured_queries if q["sql"].startswith("UPDATE"))
        return "done"

    registry.register(ToolKind("test.chatty", chatty, label="Chatty"))
    try:
        _tool("chatty", "test.chatty", "optional")
        task_id = _create(mcp11, "chatty", {})
        assert execute(task_id) == "completed"
    finally:
        registry.unregister("test.chatty")
    assert len(updates) == 2  # the first report and the final one, not 100
    assert seen == ["1 of 100", "1 of 100", "100 of 100"]


def test_non_increasing_progress_is_dropped(mcp11: Mcp, queued: None, settings: Any) -> None:
    """P-1: ToolContext drops a progress value not above the previous one (for tasks and direct calls)."""
    from mcp_tools.registry import ToolKind, registry

    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "CANCEL_POLL_SECONDS": 0}
    seen: list[str] = []

    def wobbly(ctx: Any) -> str:
        for value, message in ((2, "two"), (1, "one"), (2, "two again"), (3, "three")):
            ctx.report_progress(value, 10, message)
            seen.append(McpTask.objects.get(tool_name="wobbly").status_message)
        return "done"

    registry.register(ToolKind("test.wobbly", wobbly, label="Wobbly"))
    try:
        _tool("wobbly", "test.wobbly", "optional")
        assert execute(_create(mcp11, "wobbly", {})) == "completed"
    finally:
        registry.unregister("test.wobbly")
    assert seen == ["two", "two", "two", "three"]


def test_a_running_handler_sees_the_cancellation_and_stops(mcp11: Mcp, queued: None, settings: Any) -> None:
    """T11-13: ctx.cancelled() turns True once the row is cancelled, and the handler stops early."""
    from mcp_tools.registry import ToolKind, registry

    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "CANCEL_POLL_SECONDS": 0}
    ran: list[int] = []

    def long_job(ctx: Any) -> str:
        for step in range(1, 51):
            if ctx.cancelled:
                break
            ran.append(step)
            if step == 2:  # tasks/cancel arriving from another request while the handler runs
                assert McpTask.objects.move(ctx_task_id[0], wire.CANCELLED)
        return f"ran {len(ran)} steps"

    ctx_task_id: list[str] = []
    registry.register(ToolKind("test.long", long_job, label="Long"))
    try:
        _tool("long_job", "test.long", "optional")
        ctx_task_id.append(_create(mcp11, "long_job", {}))
        assert execute(ctx_task_id[0]) == "cancelled"
    finally:
        registry.unregister("test.long")
    assert ran == [1, 2]  # it noticed before step 3, not after all 50
    row = McpTask.objects.get(pk=ctx_task_id[0])
    assert row.status == "cancelled"
    assert row.result is None


def test_task_cancel_flag_reads_the_row_throttled_and_sticky(
    mcp11: Mcp, queued: None, settings: Any, django_assert_num_queries: Any
) -> None:
    """A task's ctx.cancelled reads its row at most every CANCEL_POLL_SECONDS; once cancelled it stays so."""
    from mcp_tools.tasking.worker import TaskCancelFlag

    task_id = _create(mcp11, "build_report", {"steps": 1})
    flag = TaskCancelFlag(task_id)
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "CANCEL_POLL_SECONDS": 0}
    with django_assert_num_queries(1):
        assert flag() is False
    assert McpTask.objects.move(task_id, wire.CANCELLED)
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "CANCEL_POLL_SECONDS": 3600}
    with django_assert_num_queries(0):
        assert flag() is False  # read less than CANCEL_POLL_SECONDS ago
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "CANCEL_POLL_SECONDS": 0}
    assert flag() is True
    with django_assert_num_queries(0):
        assert flag() is True  # sticky
    McpTask.objects.filter(pk=task_id).delete()
    assert TaskCancelFlag(task_id)() is True  # a purged row counts as cancelled


# --------------------------------------------------------------------------- 2026-07-28 extension


def test_discover_advertises_the_extension(mcp: Mcp) -> None:
    """TX-1: capabilities.extensions names io.modelcontextprotocol/tasks; no core tasks object."""
    caps = mcp.modern().call("server/discover")["capabilities"]
    assert caps["extensions"] == {EXT: {}}
    assert "tasks" not in caps
    tools = {t["name"]: t for t in mcp.call("tools/list")["tools"]}
    assert "execution" not in tools["build_report"]


def test_extension_flow(mcp: Mcp) -> None:
    """TX-2, TX-3, TX-6, TX-8: a declaring client gets a task, polls it complete, cancel acks."""
    mcp.modern()
    created = mcp.call("tools/call", {"name": "build_report", "arguments": {"steps": 1}, "_meta": ext_meta()})
    assert created["resultType"] == "task"
    assert created["status"] == "working"
    assert created["ttlMs"] == 3_600_000
    assert created["pollIntervalMs"] == 1000
    assert "task" not in created
    assert "ttl" not in created
    got = mcp.call("tasks/get", {"taskId": created["taskId"], "_meta": ext_meta()})
    assert got["resultType"] == "complete"
    assert got["status"] == "completed"
    assert got["result"]["content"][0]["text"] == "Report ready after 1 steps."
    assert got["result"]["resultType"] == "complete"
    assert mcp.call("tasks/cancel", {"taskId": created["taskId"], "_meta": ext_meta()}) == {
        "resultType": "complete",
        "_meta": got["_meta"],
    }
    ack = mcp.call("tasks/update", {"taskId": created["taskId"], "inputResponses": {}, "_meta": ext_meta()})
    assert ack["resultType"] == "complete"


def test_extension_update_needs_input_responses_and_a_known_task(mcp: Mcp) -> None:
    """TX-7: tasks/update without inputResponses, or for an unknown task, is -32602."""
    mcp.modern()
    created = mcp.call("tools/call", {"name": "build_report", "arguments": {"steps": 1}, "_meta": ext_meta()})
    _, missing, _ = mcp.request("tasks/update", {"taskId": created["taskId"], "_meta": ext_meta()})
    assert missing["error"]["code"] == -32602
    assert "inputResponses" in missing["error"]["message"]
    _, unknown, _ = mcp.request("tasks/update", {"taskId": "nope", "inputResponses": {}, "_meta": ext_meta()})
    assert unknown["error"]["code"] == -32602


def test_extension_is_error_result_completes_the_task(mcp: Mcp) -> None:
    """TX-9: an isError result completes an extension task; failed is for JSON-RPC errors."""
    _tool("failing", "demo.fail", "optional", handler_config={"message": "nope"})
    mcp.modern()
    created = mcp.call("tools/call", {"name": "failing", "arguments": {}, "_meta": ext_meta()})
    got = mcp.call("tasks/get", {"taskId": created["taskId"], "_meta": ext_meta()})
    assert got["status"] == "completed"
    assert got["result"]["isError"] is True


def test_extension_failed_task_carries_the_error(mcp: Mcp, settings: Any) -> None:
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "TASK_RESULT_MAX_BYTES": 64}
    mcp.modern()
    created = mcp.call("tools/call", {"name": "build_report", "arguments": {"steps": 1}, "_meta": ext_meta()})
    got = mcp.call("tasks/get", {"taskId": created["taskId"], "_meta": ext_meta()})
    assert got["status"] == "failed"
    assert got["error"]["code"] == -32603


def test_extension_not_declared(mcp: Mcp) -> None:
    """TX-2: an optional tool runs inline; a task-only tool and the task methods answer 400 -32021."""
    mcp.modern()
    inline = mcp.call("tools/call", {"name": "build_report", "arguments": {"steps": 1}})
    assert inline["resultType"] == "complete"
    assert inline["content"][0]["text"].startswith("Report ready")
    response, message, _ = mcp.request("tools/call", {"name": "export_archive", "arguments": {"steps": 1}})
    assert response.status_code == 400
    assert message["error"]["code"] == -32021
    assert message["error"]["data"] == {"requiredCapabilities": {"extensions": {EXT: {}}}}
    for method in ("tasks/get", "tasks/cancel", "tasks/update"):  # TX-11
        response, message, _ = mcp.request(method, {"taskId": "abc", "inputResponses": {}})
        assert response.status_code == 400, method
        assert message["error"]["code"] == -32021, method
    assert not McpTask.objects.exists()


def test_extension_has_no_result_or_list_and_ignores_task_param(mcp: Mcp) -> None:
    """TX-12: tasks/result and tasks/list are 404 -32601 under 2026-07-28; params.task is ignored."""
    mcp.modern()
    for method in ("tasks/result", "tasks/list"):
        response, message, _ = mcp.request(method, {"taskId": "abc", "_meta": ext_meta()})
        assert response.status_code == 404
        assert message["error"]["code"] == -32601
    result = mcp.call("tools/call", {"name": "echo", "arguments": {"text": "a"}, "task": {"ttl": 5}})
    assert result["resultType"] == "complete"


def test_extension_unknown_task_and_name_header(mcp: Mcp) -> None:
    """TX-6: unknown id -32602; TX-11/H-D6: Mcp-Name must echo the taskId."""
    mcp.modern()
    _, message, _ = mcp.request("tasks/get", {"taskId": "nope", "_meta": ext_meta()})
    assert message["error"]["code"] == -32602
    response, message, _ = mcp.request(
        "tasks/get", {"taskId": "nope", "_meta": ext_meta()}, headers={"Mcp-Name": "other"}
    )
    assert response.status_code == 400
    assert message["error"]["code"] == -32020


def test_tasks_disabled(mcp: Mcp, settings: Any) -> None:
    """TASKS_ENABLED=False: no capability, no execution field, params.task ignored (T11-2)."""
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "TASKS_ENABLED": False}
    init = mcp.initialize("2025-11-25")
    assert "tasks" not in init["capabilities"]
    assert all("execution" not in t for t in mcp.call("tools/list")["tools"])
    result = mcp.call("tools/call", {"name": "noop", "task": {}})
    assert result["content"][0]["text"] == "ok"
    _, message, _ = mcp.request("tasks/list")
    assert message["error"]["code"] == -32601


# --------------------------------------------------------------------------- admin


def test_admin_lists_tasks_and_staff_cancel(mcp11: Mcp, queued: None, client: Any) -> None:
    """Admin shows tasks with their status; the staff action cancels unfinished ones only."""
    from django.contrib.auth import get_user_model

    working = _create(mcp11, "build_report", {"steps": 1})
    done = _create(mcp11, "noop", {})
    assert execute(done) == "completed"
    user = get_user_model().objects.create_superuser("root", "root@example.com", "pw")
    client.force_login(user)
    page = client.get("/admin/mcp_tools/mcptask/")
    assert page.status_code == 200
    assert b"build_report" in page.content
    assert b"Completed" in page.content
    assert client.get("/admin/mcp_tools/mcptask/add/").status_code == 403
    response = client.post("/admin/mcp_tools/mcptask/", {"action": "cancel_tasks", "_selected_action": [working, done]})
    assert response.status_code == 302
    assert McpTask.objects.get(pk=working).status == "cancelled"
    assert McpTask.objects.get(pk=done).status == "completed"


def test_tasks_result_on_a_working_task_answers_still_working_after_the_wait(
    mcp11: Mcp, queued: None, settings: Any
) -> None:
    """T11-10: the wait is bounded by TASK_RESULT_WAIT_SECONDS; then a clear error, the task untouched."""
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "TASK_RESULT_WAIT_SECONDS": 0.1}
    task_id = _create(mcp11, "build_report", {"steps": 1})
    _, message, _ = mcp11.request("tasks/result", {"taskId": task_id})
    assert message["error"]["code"] == -32603
    assert "still working" in message["error"]["message"]
    assert mcp11.call("tasks/get", {"taskId": task_id})["status"] == "working"


def test_a_handler_that_ignores_a_cancel_leaves_the_task_cancelled(mcp11: Mcp, queued: None) -> None:
    """T11-13: cancelled is terminal; a handler that never looks finishes, its result is dropped."""
    from mcp_tools.registry import ToolKind, registry

    task_id: list[str] = []

    def stubborn(ctx: Any) -> str:
        assert McpTask.objects.move(task_id[0], wire.CANCELLED)  # tasks/cancel during the run
        return "done anyway"

    registry.register(ToolKind("test.stubborn", stubborn, label="Stubborn"))
    try:
        _tool("stubborn", "test.stubborn", "optional")
        task_id.append(_create(mcp11, "stubborn", {}))
        assert execute(task_id[0]) == "cancelled"
    finally:
        registry.unregister("test.stubborn")
    row = McpTask.objects.get(pk=task_id[0])
    assert row.status == "cancelled"
    assert row.result is None


# --------------------------------------------------------------------------- lost workers (heartbeats)


def _started(task_id: str, seconds_ago: float, attempts: int = 1) -> McpTask:
    """The task as a worker left it: attempt ``attempts`` started, last heartbeat that long ago."""
    beat = timezone.now() - timedelta(seconds=seconds_ago)
    McpTask.objects.filter(pk=task_id).update(attempts=attempts, started_at=beat, heartbeat_at=beat, status="working")
    return McpTask.objects.get(pk=task_id)


def test_a_redelivery_while_the_task_still_runs_does_nothing(mcp11: Mcp, queued: None) -> None:
    """A short visibility timeout no longer runs a slow task twice: its heartbeat is fresh."""
    task_id = _create(mcp11, "noop", {})
    row = _started(task_id, seconds_ago=1)
    assert execute(task_id, row.celery_id) == "running"
    after = McpTask.objects.get(pk=task_id)
    assert (after.status, after.attempts) == ("working", 1)


def test_tasks_get_retries_a_task_whose_worker_is_gone(mcp11: Mcp, queued: None) -> None:
    """On read: a stale heartbeat queues the task again under a new message id; the old message
    is then stale, the new one runs attempt 2 (never both)."""
    task_id = _create(mcp11, "noop", {})
    old = _started(task_id, seconds_ago=120)
    state = mcp11.call("tasks/get", {"taskId": task_id})
    assert state["status"] == "working"
    assert "queued again (attempt 2 of 3)" in state["statusMessage"]
    row = McpTask.objects.get(pk=task_id)
    assert row.celery_id != old.celery_id
    assert execute(task_id, old.celery_id) == "superseded"
    assert execute(task_id, row.celery_id) == "completed"
    assert McpTask.objects.get(pk=task_id).attempts == 2


def test_tasks_get_fails_a_lost_task_when_no_attempt_is_left(mcp11: Mcp, queued: None, settings: Any) -> None:
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "TASK_MAX_ATTEMPTS": 2}
    task_id = _create(mcp11, "noop", {})
    _started(task_id, seconds_ago=120, attempts=2)
    state = mcp11.call("tasks/get", {"taskId": task_id})
    assert state["status"] == "failed"
    assert state["statusMessage"] == WORKER_LOST_MESSAGE


def test_the_sweep_finds_every_lost_task_and_leaves_live_ones(mcp11: Mcp, queued: None) -> None:
    from mcp_tools.tasks import sweep_lost_tasks

    lost = [_create(mcp11, "noop", {}) for _ in range(3)]
    live = _create(mcp11, "noop", {})
    for task_id in lost:
        _started(task_id, seconds_ago=120)
    _started(live, seconds_ago=1)
    before = {t.pk: t.celery_id for t in McpTask.objects.all()}
    assert sweep_lost_tasks() == 3
    after = {t.pk: t.celery_id for t in McpTask.objects.all()}
    assert {pk for pk in before if before[pk] != after[pk]} == set(lost)
    assert sweep_lost_tasks() == 0  # queued again with a fresh heartbeat: not lost yet


def test_a_superseded_attempt_cannot_write_its_outcome(mcp11: Mcp, queued: None) -> None:
    from mcp_tools.tasking.worker import TaskCancelFlag

    task_id = _create(mcp11, "noop", {})
    _started(task_id, seconds_ago=0, attempts=2)  # attempt 2 runs now; attempt 1 was given up
    assert not McpTask.objects.move(task_id, wire.COMPLETED, attempt=1)
    assert TaskCancelFlag(task_id, attempt=1)() is True  # the old attempt's handler is told to stop
    assert TaskCancelFlag(task_id, attempt=2)() is False
    assert McpTask.objects.move(task_id, wire.COMPLETED, attempt=2)
