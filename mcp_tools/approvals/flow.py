"""Approval-gated tools: a call waits for a person's decision on its ``McpApproval`` row.

A plain call stores a pending row and polls it (``await_decision``, in the process serving the
call); a task-augmented call stores its task held (working, not enqueued) with a pending row
(``hold_task``). Whoever decides, in any process (``decide``: the admin), moves the row once,
under ``select_for_update``: an approved task is enqueued then, a rejected one ends with the
reason. A pending row past its deadline expires: by the waiting call itself, by ``expire_due``
(the beat task ``mcp_tools.expire_approvals``) or when its task is read (``settle_task``). An
approved plain call runs once: the waiting process claims it (``claim``) before running it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from .. import audit
from ..asking.waiting import poll
from ..catalog import CompiledTool
from ..conf import mcp_settings
from ..models import ApprovalState, McpApproval, McpTask
from ..protocol import task_wire as wire
from ..protocol import versions as v
from ..runner import error
from ..tasking import AWAITING_APPROVAL, QueueUnavailable
from ..tasking.results import store_result
from ..tasking.service import NewTask, create_task, enqueue
from ..types import Principal

__all__ = [
    "AWAITING",
    "Decided",
    "DecisionRefused",
    "await_decision",
    "claim",
    "decide",
    "expire_due",
    "hold_task",
    "may_decide",
    "redact",
    "refusal",
    "request",
    "settle_task",
    "task_cancelled",
    "timeout_of",
]

logger = logging.getLogger("mcp_tools")

# What a held task says while it waits (its statusMessage).
AWAITING = AWAITING_APPROVAL
DECIDED_STATES = frozenset({ApprovalState.APPROVED, ApprovalState.REJECTED})


class DecisionRefused(Exception):
    """A decision that cannot be taken: decided already, expired, the call gone, not allowed."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def timeout_of(tool: CompiledTool) -> int:
    return tool.approval_timeout or int(mcp_settings.APPROVAL_TIMEOUT)


def redact(arguments: dict[str, Any], sensitive: frozenset[str]) -> dict[str, Any]:
    """The arguments as a person sees them to decide: whole, but sensitive values redacted."""
    words = [n.lower() for n in mcp_settings.AUDIT_REDACT_NAMES]
    return {
        name: audit.REDACTED if name in sensitive or any(w in str(name).lower() for w in words) else value
        for name, value in arguments.items()
    }


def request(tool: CompiledTool, arguments: dict[str, Any], principal: Principal, *, task_id: str = "") -> McpApproval:
    """Store a pending row for one call of ``tool``."""
    now = timezone.now()
    user = principal.user
    return McpApproval.objects.create(
        tool_id=tool.pk,
        tool_name=tool.name,
        tool_version=tool.version,
        arguments=redact(arguments, tool.sensitive_arguments),
        user_id=getattr(user, "pk", None) if getattr(user, "is_authenticated", False) else None,
        principal_key=principal.key[:255],
        client_id=(principal.client_id or "")[:255],
        requested_at=now,
        expires_at=now + timedelta(seconds=timeout_of(tool)),
        task_id=task_id,
    )


# --------------------------------------------------------------------------- plain calls


def await_decision(pk: int, timeout: float, cancelled: Any) -> McpApproval:
    """The row once decided, expired or cancelled: waits up to ``timeout`` seconds.

    Cancellation of the call (``cancelled()``) settles the row as cancelled; the deadline as
    expired. A decision taken at the same moment wins over both (the moves are conditional).
    """

    def look() -> McpApproval | None:
        row = McpApproval.objects.filter(pk=pk).first()
        return row if row is None or row.state != ApprovalState.PENDING else None

    found = poll(look, timeout, cancelled)
    if found is not None:
        return found
    now = timezone.now()
    if cancelled():
        McpApproval.objects.settle(pk, ApprovalState.CANCELLED, reason="The call was cancelled.", decided_at=now)
    else:
        McpApproval.objects.settle(pk, ApprovalState.EXPIRED, decided_at=now)
    row = McpApproval.objects.filter(pk=pk).first()
    if row is None:  # deleted meanwhile: nobody may approve it any more
        return McpApproval(pk=pk, state=ApprovalState.EXPIRED, tool_name="", tool_version=0, expires_at=now)
    return row


def claim(pk: int) -> bool:
    """Whether this process may run the approved call ``pk`` (only the first to ask may)."""
    return (
        McpApproval.objects.filter(pk=pk, state=ApprovalState.APPROVED, started_at__isnull=True).update(
            started_at=timezone.now()
        )
        > 0
    )


def refusal(row: McpApproval, tool_name: str, timeout: float) -> str:
    """What the caller is told when its call was not approved."""
    if row.state == ApprovalState.REJECTED:
        who = _name(row.decided_by) if row.decided_by_id else "an administrator"
        reason = row.reason.strip() or "no reason given"
        return f"The call of tool {tool_name!r} was rejected by {who}: {reason}"
    if row.state == ApprovalState.CANCELLED:
        return f"The call of tool {tool_name!r} was cancelled before it was approved."
    if row.state == ApprovalState.APPROVED:
        return f"The call of tool {tool_name!r} was approved and has run already."
    return f"The call of tool {tool_name!r} was not approved within {timeout:g} seconds; nothing was run."


def _name(user: Any) -> str:
    return str(user.get_username()) if user is not None else "an administrator"


# --------------------------------------------------------------------------- task-augmented calls


def hold_task(new: NewTask) -> McpTask:
    """A working task, not enqueued, and its pending row, in one transaction."""
    with transaction.atomic():
        task = create_task(new, held=AWAITING)
        approval = request(new.tool, new.arguments, new.principal, task_id=task.pk)
        task.status_message = f"{AWAITING} (call #{approval.pk})."
        McpTask.objects.filter(pk=task.pk).update(status_message=task.status_message)
    return task


def _release(task_id: str, approval_pk: int) -> None:
    """Enqueue an approved task (after the decision commits); a broker failure fails it."""
    now = timezone.now()
    task = McpTask.objects.filter(pk=task_id, status=wire.WORKING, attempts=0).first()
    if task is None:
        return  # cancelled meanwhile (or purged)
    McpTask.objects.filter(pk=task_id, status=wire.WORKING).update(
        status_message=f"Approved (call #{approval_pk}); queued.", updated_at=now
    )
    try:
        enqueue(task)
    except QueueUnavailable:
        message = "The task was approved but the task queue is unavailable; call the tool again."
        McpTask.objects.move(task_id, wire.FAILED, error_code=-32603, error_message=message,
                             status_message=message, finished_at=now)  # fmt: skip


def _end_task(row: McpApproval, message: str) -> None:
    """A held task that will not run: its result is the refusal (failed or completed per T11-17/TX-9)."""
    task = McpTask.objects.filter(pk=row.task_id).only("pk", "protocol_version").first()
    if task is None:
        return
    rev = v.get_revision(task.protocol_version)
    status = wire.FAILED if wire.failed_on_error(rev, True) else wire.COMPLETED
    McpTask.objects.move(
        task.pk, status, result=store_result(error(message)), status_message=message, finished_at=timezone.now()
    )


def task_cancelled(task_id: str) -> None:
    """Its caller cancelled a held task: nobody needs to decide on it any more."""
    now = timezone.now()
    for pk in McpApproval.objects.pending().filter(task_id=task_id).values_list("pk", flat=True):
        McpApproval.objects.settle(pk, ApprovalState.CANCELLED, reason="The task was cancelled.", decided_at=now)


def settle_task(task: McpTask) -> McpTask:
    """``task`` after its approval, if overdue, expired (``tasks/get`` and friends read it so)."""
    if task.status != wire.WORKING or task.attempts or not task.status_message.startswith(AWAITING):
        return task
    for row in McpApproval.objects.due().filter(task_id=task.pk):
        _expire(row)
    return McpTask.objects.filter(pk=task.pk).first() or task


def expire_due(limit: int = 1000) -> int:
    """Expire every pending row past its deadline (its held task ends); how many expired."""
    done = 0
    for row in McpApproval.objects.due().order_by("expires_at")[:limit]:
        done += _expire(row)
    return done


def _expire(row: McpApproval) -> bool:
    if not McpApproval.objects.settle(row.pk, ApprovalState.EXPIRED, decided_at=timezone.now()):
        return False
    if row.task_id:
        seconds = (row.expires_at - row.requested_at).total_seconds()
        _end_task(row, refusal(McpApproval(state=ApprovalState.EXPIRED), row.tool_name, seconds))
    logger.info("Approval of call #%s (tool %r) expired", row.pk, row.tool_name)
    return True


# --------------------------------------------------------------------------- decisions


@dataclass(frozen=True, slots=True)
class Decided:
    row: McpApproval
    message: str  # what the admin says: "Approved call #12 of tool X."


def may_decide(user: Any) -> bool:
    return bool(getattr(user, "is_active", False) and user.has_perm("mcp_tools.approve_call"))


def _undecidable(row: McpApproval, now: datetime) -> str:
    """Why the locked pending call can no longer be decided ("" when it can), settled so."""
    pk = row.pk
    task = McpTask.objects.filter(pk=row.task_id).only("pk", "status").first() if row.task_id else None
    if row.state != ApprovalState.PENDING:
        return f"Call #{pk} of tool {row.tool_name!r} was already {row.get_state_display().lower()}."
    if row.expires_at <= now:
        _expire(row)
        return f"Call #{pk} of tool {row.tool_name!r} expired before it was decided."
    if row.task_id and (task is None or task.status != wire.WORKING):
        McpApproval.objects.settle(pk, ApprovalState.CANCELLED, reason="The task was cancelled.", decided_at=now)
        return f"Call #{pk} of tool {row.tool_name!r} was cancelled by its caller."
    return ""


def _record_decision(row: McpApproval, *, approve: bool, user: Any, reason: str, now: datetime) -> None:
    """The decision saved on the row; an approved task released once it commits, a rejected one ended."""
    row.state = ApprovalState.APPROVED if approve else ApprovalState.REJECTED
    row.reason = "" if approve else reason
    row.decided_by = user
    row.decided_at = now
    row.save(update_fields=["state", "reason", "decided_by", "decided_at"])
    if not row.task_id:
        return
    if approve:
        task_id, approval_pk = row.task_id, row.pk
        transaction.on_commit(lambda: _release(task_id, approval_pk))
    else:
        _end_task(row, refusal(row, row.tool_name, 0))


def decide(pk: int, *, approve: bool, user: Any, reason: str = "") -> Decided:
    """Approve or reject pending call ``pk`` as ``user``; ``DecisionRefused`` says why not.

    The row is locked while it moves, so two people (or a person and the deadline) deciding at
    once give one decision; the other is refused. An approved task is enqueued once the decision
    commits; a rejected one ends with the reason. Writes one audit row.
    """
    if not may_decide(user):
        raise DecisionRefused("You may not approve or reject calls (the approve_call permission is needed).")
    reason = reason.strip()[:2000]
    now = timezone.now()
    with transaction.atomic():
        row = McpApproval.objects.select_for_update().filter(pk=pk).first()
        if row is None:
            raise DecisionRefused(f"There is no call #{pk} awaiting approval.")
        refused = _undecidable(row, now)
        if not refused:
            _record_decision(row, approve=approve, user=user, reason=reason, now=now)
    if refused:
        raise DecisionRefused(refused)
    verb = "Approved" if approve else "Rejected"
    audit.record(
        audit.CallEvent(
            principal=Principal(key=f"user:{user.pk}", user=user, client_id="admin"),
            tool_name=row.tool_name,
            tool_version=row.tool_version,
            arguments=row.arguments,
            sensitive=frozenset(),
            outcome="approved" if approve else "rejected",
            detail=f"{verb} call #{row.pk} of {row.principal_key}" + (f": {reason}" if reason and not approve else ""),
            duration_ms=0,
            request_id=f"approval:{row.pk}",
            protocol_version="",
        )
    )
    logger.info("%s call #%s of tool %r (by %s)", verb, row.pk, row.tool_name, _name(user))
    return Decided(row, f"{verb} call #{row.pk} of tool {row.tool_name}.")
