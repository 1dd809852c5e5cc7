"""Approval-gated tools: a call waits for a person's decision on its ``McpApproval`` row.

Plain calls through the view on 2025-11-25 and 2026-07-28: while the call polls its row,
``asking.waiting.pause`` hands control to the test, which decides as an admin would
(``approvals.decide``; the admin's own pages: the tests at the end). Task-augmented calls:
the task is held (working, not enqueued) until approved; the test runs the worker entry point
itself. The real server, SDK clients and Celery worker: tests/e2e/test_approvals_e2e.py.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import Permission, User
from django.contrib.messages import get_messages
from django.db.models import F
from django.utils import timezone

from mcp_tools import approvals
from mcp_tools.asking import waiting
from mcp_tools.models import ApprovalState, AuditEvent, McpApproval, McpTask, Tool
from mcp_tools.registry import ToolKind, registry
from mcp_tools.tasking.worker import execute
from tests.support.mcp_client import MODERN, Mcp, modern_meta

pytestmark = pytest.mark.django_db

EXT = "io.modelcontextprotocol/tasks"
RUNS: list[dict[str, Any]] = []


@pytest.fixture(autouse=True)
def gated_tool() -> Iterator[Tool]:
    """``pay``: approval-gated, records each run (so a test sees it ran once, or never)."""

    def pay(ctx: Any) -> dict[str, Any]:
        RUNS.append(dict(ctx.arguments))
        return {"paid": ctx.arguments["amount"]}

    RUNS.clear()
    registry.register(ToolKind("test.pay", pay))
    tool = Tool.objects.create(
        name="pay",
        description="Pays someone.",
        handler_key="test.pay",
        input_schema={
            "type": "object",
            "properties": {"amount": {"type": "integer"}, "pin": {"type": "string"}},
            "required": ["amount"],
        },
        output_schema={"type": "object", "properties": {"paid": {"type": "integer"}}},
        requires_approval=True,
        sensitive_arguments=["pin"],
        task_support="optional",
    )
    yield tool
    registry.unregister("test.pay")


@pytest.fixture
def approver() -> User:
    user = User.objects.create_user("approver", password="pw", is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="approve_call"))
    return User.objects.get(pk=user.pk)  # fresh permission cache


@pytest.fixture
def turns(monkeypatch: pytest.MonkeyPatch) -> list[Callable[[], None]]:
    """Steps the test plays (as the approver) while the call waits, one per look at its row."""
    steps: list[Callable[[], None]] = []
    real_pause = waiting.pause

    def pause(seconds: float) -> None:
        if steps:
            steps.pop(0)()
        else:
            real_pause(seconds)

    monkeypatch.setattr(waiting, "pause", pause)
    return steps


def _pending() -> McpApproval:
    return McpApproval.objects.get(state=ApprovalState.PENDING)


# Legacy calls here accept JSON only: a live SSE stream (the "awaits approval" log message the
# server sends first) is tested end to end, not through Django's test client.
JSON_ONLY = {"Accept": "application/json"}


def _call(mcp: Mcp, version: str, arguments: dict[str, Any], **params: Any) -> dict[str, Any]:
    if version == MODERN:
        mcp.modern()
        return mcp.call("tools/call", {"name": "pay", "arguments": arguments, **params})
    mcp.initialize(version)
    return mcp.call("tools/call", {"name": "pay", "arguments": arguments, **params}, headers=JSON_ONLY)


def _text(result: dict[str, Any]) -> str:
    return str(result["content"][0]["text"])


# --------------------------------------------------------------------------- plain calls


@pytest.mark.parametrize("version", ["2025-11-25", MODERN])
def test_an_approved_call_runs_once_and_answers_the_waiting_caller(
    mcp: Mcp, approver: User, turns: list[Callable[[], None]], version: str
) -> None:
    seen: dict[str, Any] = {}

    def decide() -> None:
        row = _pending()
        seen["arguments"] = row.arguments
        assert RUNS == []  # nothing ran before the decision
        approvals.decide(row.pk, approve=True, user=approver)

    turns.append(decide)
    result = _call(mcp, version, {"amount": 40, "pin": "1234"})
    assert result.get("isError") is not True, result
    assert result["structuredContent"] == {"paid": 40}
    assert RUNS == [{"amount": 40, "pin": "1234"}]
    assert seen["arguments"] == {"amount": 40, "pin": "[redacted]"}  # the approver sees no secrets
    row = McpApproval.objects.get()
    assert (row.state, row.decided_by, row.started_at is not None) == ("approved", approver, True)
    assert row.tool_name == "pay"
    assert row.principal_key
    outcomes = sorted(AuditEvent.objects.values_list("outcome", flat=True))
    assert outcomes == ["approved", "ok"]  # the decision, and the call


@pytest.mark.parametrize("version", ["2025-11-25", MODERN])
def test_a_rejected_call_is_refused_with_the_reason_and_never_runs(
    mcp: Mcp, approver: User, turns: list[Callable[[], None]], version: str
) -> None:
    turns.append(lambda: approvals.decide(_pending().pk, approve=False, user=approver, reason="Too much today"))
    result = _call(mcp, version, {"amount": 9000})
    assert result["isError"] is True
    assert _text(result) == "The call of tool 'pay' was rejected by approver: Too much today"
    assert RUNS == []
    assert McpApproval.objects.get().state == "rejected"
    call = AuditEvent.objects.get(outcome="rejected", request_id__startswith="approval:")
    assert call.detail.endswith(": Too much today")
    assert AuditEvent.objects.filter(outcome="rejected").count() == 2  # the decision and the call


def test_an_undecided_call_expires_with_a_clear_refusal(mcp: Mcp, gated_tool: Tool) -> None:
    gated_tool.approval_timeout = 1
    gated_tool.save()
    result = _call(mcp, "2025-11-25", {"amount": 1})
    assert result["isError"] is True
    assert _text(result) == "The call of tool 'pay' was not approved within 1 seconds; nothing was run."
    assert McpApproval.objects.get().state == "expired"
    assert AuditEvent.objects.get().outcome == "expired"
    assert RUNS == []


def test_cancelling_the_call_cancels_its_approval(mcp: Mcp, turns: list[Callable[[], None]]) -> None:
    mcp.initialize("2025-11-25")
    request_id = mcp._next_id + 1
    turns.append(lambda: mcp.notify("notifications/cancelled", {"requestId": request_id, "reason": "changed my mind"}))
    response, message, _ = mcp.request("tools/call", {"name": "pay", "arguments": {"amount": 3}}, headers=JSON_ONLY)
    assert "result" not in message  # L-: no response to a cancelled request
    row = McpApproval.objects.get()
    assert row.state == "cancelled"
    with pytest.raises(approvals.DecisionRefused, match="already cancelled"):
        approvals.decide(row.pk, approve=True, user=User.objects.create_superuser("root"))
    assert RUNS == []


# --------------------------------------------------------------------------- decisions


def test_only_approvers_decide(gated_tool: Tool) -> None:
    row = _row(gated_tool)
    staff = User.objects.create_user("staff", is_staff=True)
    with pytest.raises(approvals.DecisionRefused, match="approve_call permission"):
        approvals.decide(row.pk, approve=True, user=staff)
    assert McpApproval.objects.get().state == "pending"
    approvals.decide(row.pk, approve=True, user=User.objects.create_superuser("root"))
    assert McpApproval.objects.get().state == "approved"


def test_a_second_decision_is_refused_cleanly(gated_tool: Tool, approver: User) -> None:
    row = _row(gated_tool)
    approvals.decide(row.pk, approve=True, user=approver)
    with pytest.raises(approvals.DecisionRefused, match=r"Call #\d+ of tool 'pay' was already approved\."):
        approvals.decide(row.pk, approve=False, user=approver, reason="late")
    with pytest.raises(approvals.DecisionRefused, match="no call #999999"):
        approvals.decide(999999, approve=True, user=approver)
    assert approvals.claim(row.pk) is True
    assert approvals.claim(row.pk) is False  # an approved call runs once


def test_a_late_decision_finds_the_call_expired(gated_tool: Tool, approver: User) -> None:
    row = _row(gated_tool)
    McpApproval.objects.filter(pk=row.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    with pytest.raises(approvals.DecisionRefused, match="expired before it was decided"):
        approvals.decide(row.pk, approve=True, user=approver)
    assert McpApproval.objects.get().state == "expired"


@pytest.mark.django_db(transaction=True)
def test_two_approvers_at_once_give_one_decision(gated_tool: Tool, approver: User) -> None:
    """select_for_update: of two decisions racing in two connections, one wins, one is refused."""
    row = _row(gated_tool)
    other = User.objects.create_superuser("other")
    outcomes: list[str] = []
    barrier = threading.Barrier(2, timeout=10)

    def decide(user: User, approve: bool) -> None:
        from django.db import connection

        try:
            barrier.wait()
            approvals.decide(row.pk, approve=approve, user=user, reason="no")
            outcomes.append("decided")
        except approvals.DecisionRefused:
            outcomes.append("refused")
        except Exception as exc:  # e.g. SQLite's "database is locked": still not two decisions
            outcomes.append(f"failed: {exc}")
        finally:
            connection.close()

    threads = [threading.Thread(target=decide, args=args) for args in ((approver, True), (other, False))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=20)
    assert outcomes.count("decided") == 1, outcomes
    final = McpApproval.objects.get()
    assert final.state in ("approved", "rejected")
    assert AuditEvent.objects.filter(outcome__in=["approved", "rejected"]).count() == 1


def _row(tool: Tool) -> McpApproval:
    from mcp_tools.catalog import get_catalog
    from mcp_tools.types import Principal

    compiled = get_catalog().get(tool.name)
    assert compiled is not None
    assert compiled.requires_approval
    return approvals.request(compiled, {"amount": 5}, Principal(key="caller"))


# --------------------------------------------------------------------------- task-augmented calls


@pytest.fixture
def enqueued_ids(settings: Any) -> Iterator[list[str]]:
    """Messages go to Celery's in-memory broker (nothing runs by itself); returns the ids sent."""
    from mcp_tools.tasking import service
    from project.celery import app

    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "TASK_RESULT_WAIT_SECONDS": 0.3}
    sent: list[str] = []
    real = service.enqueue

    def enqueue(task: McpTask) -> None:
        sent.append(task.pk)
        real(task)

    app.conf.task_always_eager = False
    service.enqueue = enqueue  # type: ignore[assignment]
    from mcp_tools.approvals import flow

    flow.enqueue = enqueue  # type: ignore[assignment]
    yield sent
    service.enqueue = real  # type: ignore[assignment]
    flow.enqueue = real  # type: ignore[assignment]
    app.conf.task_always_eager = True


def _task(mcp: Mcp, version: str) -> str:
    arguments = {"amount": 7}
    if version == MODERN:
        declared = {"io.modelcontextprotocol/clientCapabilities": {"extensions": {EXT: {}}}}
        created = mcp.modern().call(
            "tools/call", {"name": "pay", "arguments": arguments, "_meta": modern_meta(**declared)}
        )
        assert created["resultType"] == "task"
        return str(created["taskId"])
    mcp.initialize(version)
    return str(mcp.call("tools/call", {"name": "pay", "arguments": arguments, "task": {}})["task"]["taskId"])


@pytest.mark.parametrize("version", ["2025-11-25", MODERN])
def test_an_approved_task_is_queued_then_and_runs(
    mcp: Mcp, approver: User, enqueued_ids: list[str], version: str, django_capture_on_commit_callbacks: Any
) -> None:
    task_id = _task(mcp, version)
    task = McpTask.objects.get(pk=task_id)
    row = _pending()
    assert (task.status, task.status_message) == ("working", f"Awaiting approval (call #{row.pk}).")
    assert row.task_id == task_id
    assert enqueued_ids == []  # held: not enqueued before the decision
    with django_capture_on_commit_callbacks(execute=True):
        approvals.decide(row.pk, approve=True, user=approver)
        assert enqueued_ids == []  # once the decision commits
    assert enqueued_ids == [task_id]
    assert execute(task_id, McpTask.objects.get(pk=task_id).celery_id) == "completed"
    assert RUNS == [{"amount": 7}]


@pytest.mark.parametrize(("version", "status"), [("2025-11-25", "failed"), (MODERN, "completed")])
def test_a_rejected_task_ends_with_the_reason(
    mcp: Mcp, approver: User, enqueued_ids: list[str], version: str, status: str
) -> None:
    """T11-17: an isError result fails a 2025-11-25 task; TX-9: it completes an extension task."""
    task_id = _task(mcp, version)
    approvals.decide(_pending().pk, approve=False, user=approver, reason="Not this month")
    task = McpTask.objects.get(pk=task_id)
    assert task.status == status
    assert "rejected by approver: Not this month" in task.status_message
    assert enqueued_ids == []
    assert RUNS == []
    if version != MODERN:
        result = mcp.call("tasks/result", {"taskId": task_id})
        assert result["isError"] is True
        assert _text(result) == "The call of tool 'pay' was rejected by approver: Not this month"


def test_an_undecided_task_expires_when_read_or_swept(mcp: Mcp, enqueued_ids: list[str]) -> None:
    first, second = _task(mcp, "2025-11-25"), _task(mcp, "2025-11-25")
    past = timedelta(seconds=301)
    McpApproval.objects.update(requested_at=F("requested_at") - past, expires_at=F("expires_at") - past)
    got = mcp.call("tasks/get", {"taskId": first})
    assert got["status"] == "failed"
    assert "was not approved within 300 seconds" in got["statusMessage"]
    assert approvals.expire_due() == 1  # the other one, as the beat task does
    assert McpTask.objects.get(pk=second).status == "failed"
    assert set(McpApproval.objects.values_list("state", flat=True)) == {"expired"}
    assert enqueued_ids == []
    assert RUNS == []


def test_a_cancelled_held_task_cancels_its_approval(mcp: Mcp, approver: User, enqueued_ids: list[str]) -> None:
    task_id = _task(mcp, "2025-11-25")
    mcp.call("tasks/cancel", {"taskId": task_id})
    row = McpApproval.objects.get()
    assert row.state == "cancelled"
    with pytest.raises(approvals.DecisionRefused, match="already cancelled"):
        approvals.decide(row.pk, approve=True, user=approver)
    assert enqueued_ids == []


# --------------------------------------------------------------------------- the admin


@pytest.fixture
def approver_client(client: Any, approver: User) -> Any:
    client.force_login(approver)
    return client


def test_the_admin_lists_pending_calls_and_approves_one(approver_client: Any, gated_tool: Tool, approver: User) -> None:
    row = _row(gated_tool)
    listing = approver_client.get("/admin/mcp_tools/mcpapproval/")
    assert listing.status_code == 200
    assert f"#{row.pk}" in listing.content.decode()
    page = approver_client.get(f"/admin/mcp_tools/mcpapproval/{row.pk}/change/")
    body = page.content.decode()
    assert page.status_code == 200
    assert 'value="Approve"' in body
    assert 'name="reason"' in body
    assert "&quot;amount&quot;: 5" in body  # arguments, pretty-printed
    decided = approver_client.post(
        f"/admin/mcp_tools/mcpapproval/{row.pk}/decide/", {"decision": "approve"}, follow=True
    )
    assert f"Approved call #{row.pk} of tool pay." in decided.content.decode()
    assert McpApproval.objects.get().state == "approved"
    entry = LogEntry.objects.get()
    assert (entry.user, entry.object_id, entry.get_change_message()) == (
        approver,
        str(row.pk),
        f"Approved call #{row.pk} of tool pay.",
    )
    url = f"/admin/mcp_tools/mcpapproval/{row.pk}/decide/"
    again = approver_client.post(url, {"decision": "reject", "reason": "x"}, follow=True)
    assert "was already approved" in again.content.decode()


def test_the_admin_rejects_only_with_a_reason(approver_client: Any, gated_tool: Tool) -> None:
    row = _row(gated_tool)
    url = f"/admin/mcp_tools/mcpapproval/{row.pk}/decide/"
    blank = approver_client.post(url, {"decision": "reject", "reason": "  "}, follow=True)
    assert "Give a reason to reject the call" in blank.content.decode()
    assert McpApproval.objects.get().state == "pending"
    done = approver_client.post(url, {"decision": "reject", "reason": "Wrong account"}, follow=True)
    assert f"Rejected call #{row.pk} of tool pay." in done.content.decode()
    assert McpApproval.objects.values_list("state", "reason").get() == ("rejected", "Wrong account")
    assert approver_client.get(url).status_code == 405


def test_staff_without_the_permission_cannot_decide(client: Any, gated_tool: Tool) -> None:
    row = _row(gated_tool)
    staff = User.objects.create_user("viewer", is_staff=True)
    staff.user_permissions.add(Permission.objects.get(codename="view_mcpapproval"))
    client.force_login(staff)
    page = client.get(f"/admin/mcp_tools/mcpapproval/{row.pk}/change/")
    assert page.status_code == 200
    assert 'value="Approve"' not in page.content.decode()
    refused = client.post(f"/admin/mcp_tools/mcpapproval/{row.pk}/decide/", {"decision": "approve"})
    assert refused.status_code == 403
    assert McpApproval.objects.get().state == "pending"


def test_bulk_actions_decide_each_pending_call(approver_client: Any, gated_tool: Tool) -> None:
    rows = [_row(gated_tool) for _ in range(3)]
    url = "/admin/mcp_tools/mcpapproval/"
    approved = approver_client.post(url, {"action": "approve_selected", "_selected_action": [rows[0].pk, rows[1].pk]})
    said = [str(m) for m in get_messages(approved.wsgi_request)]
    assert said == [f"Approved 2 call(s): #{rows[0].pk}, #{rows[1].pk}."]
    done = approver_client.post(
        url + "?state=all",
        {"action": "reject_selected", "_selected_action": [r.pk for r in rows]},
        follow=True,
    )
    said = [str(m) for m in get_messages(done.wsgi_request)]
    assert said[-1] == (
        f"Rejected 1 call(s): #{rows[2].pk}; 2 not: Call #{rows[0].pk} of tool 'pay' was already approved. "
        f"Call #{rows[1].pk} of tool 'pay' was already approved."
    )
    states = dict(McpApproval.objects.values_list("pk", "state"))
    assert [states[r.pk] for r in rows] == ["approved", "approved", "rejected"]
    assert LogEntry.objects.count() == 3


# --------------------------------------------------------------------------- the flag on the tool


def test_the_flag_is_exported_imported_revised_and_edited(gated_tool: Tool, approver_client: Any) -> None:
    from mcp_tools.editing.transfer import ImportRejected, export_tools, import_tools
    from mcp_tools.models import ToolRevision

    gated_tool.approval_timeout = 45
    gated_tool.save()
    [row] = export_tools([gated_tool])["tools"]
    assert (row["requires_approval"], row["approval_timeout"]) == (True, 45)
    document = export_tools([gated_tool])
    document["tools"][0].update(requires_approval=False, approval_timeout=None)
    import_tools(document)
    tool = Tool.objects.get(name="pay")
    assert (tool.requires_approval, tool.approval_timeout) == (False, None)
    latest = ToolRevision.objects.filter(tool_pk=tool.pk).first()
    assert latest is not None
    assert latest.data["requires_approval"] is False
    document["tools"][0]["approval_timeout"] = 0
    with pytest.raises(ImportRejected) as rejected:
        import_tools(document)
    assert rejected.value.problems == [
        "tool 1 ('pay'): approval_timeout: Ensure this value is greater than or equal to 1."
    ]
    approver_client.force_login(User.objects.create_superuser("root"))
    page = approver_client.get(f"/admin/mcp_tools/tool/{tool.pk}/change/").content.decode()
    assert 'name="requires_approval"' in page
    assert 'name="approval_timeout"' in page


def test_calls_waiting_for_people_never_take_every_handler_thread(mcp: Mcp, settings: Any) -> None:
    """Approval waits share the half of HANDLER_POOL_SIZE that legacy answers may hold."""
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "HANDLER_POOL_SIZE": 2}
    assert waiting.people.take()  # the one slot: a call already waits for a person
    try:
        result = _call(mcp, "2025-11-25", {"amount": 1})
    finally:
        waiting.people.give_back()
    assert result["isError"] is True
    assert _text(result).startswith("Too many calls on this server are waiting for a person right now")
    assert result["_meta"] == {"retryAfterSeconds": 5.0}
    assert not McpApproval.objects.exists()
    assert RUNS == []
