"""Wire shapes of tasks, one adapter per revision family (Django-free).

The database row knows nothing about the wire: services turn it into a ``TaskState`` and
these functions shape it for the 2025-11-25 core tasks (``task`` param, ``tasks/get|result|
list|cancel``) or the 2026-07-28 ``io.modelcontextprotocol/tasks`` extension (server-decided
tasks, ``resultType: "task"``, ``tasks/get|update|cancel``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from .errors import INTERNAL_ERROR, MISSING_REQUIRED_CLIENT_CAPABILITY, McpError, invalid_params
from .versions import META_RELATED_TASK, Revision

__all__ = [
    "CANCELLED",
    "COMPLETED",
    "FAILED",
    "INPUT_REQUIRED",
    "STATUSES",
    "TERMINAL",
    "TaskState",
    "WORKING",
    "client_declared_extension",
    "core_capabilities",
    "core_create_result",
    "core_input_request",
    "core_status_notification",
    "core_task",
    "ext_capabilities",
    "ext_create_result",
    "ext_detailed",
    "extension_required",
    "failed_on_error",
    "related_task_meta",
    "requested_ttl",
    "task_id_param",
    "task_not_found",
]

TASKS_EXTENSION = "io.modelcontextprotocol/tasks"

WORKING = "working"
INPUT_REQUIRED = "input_required"
COMPLETED = "completed"
FAILED = "failed"
CANCELLED = "cancelled"
STATUSES = (WORKING, INPUT_REQUIRED, COMPLETED, FAILED, CANCELLED)
TERMINAL = frozenset({COMPLETED, FAILED, CANCELLED})


@dataclass(frozen=True, slots=True)
class TaskState:
    """One task as the protocol sees it; ``result`` is an already shaped CallToolResult."""

    task_id: str
    status: str
    status_message: str
    created_at: datetime
    updated_at: datetime
    ttl_ms: int | None
    poll_interval_ms: int | None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    # 2026-07-28, status input_required: the outstanding requests by key (TX-6).
    input_requests: dict[str, dict[str, Any]] | None = None


def iso(value: datetime) -> str:
    return value.isoformat().replace("+00:00", "Z")


def _common(state: TaskState) -> dict[str, Any]:
    task: dict[str, Any] = {"taskId": state.task_id, "status": state.status}
    if state.status_message:
        task["statusMessage"] = state.status_message
    task["createdAt"] = iso(state.created_at)
    task["lastUpdatedAt"] = iso(state.updated_at)
    return task


# --------------------------------------------------------------------------- 2025-11-25 core


def core_task(state: TaskState) -> dict[str, Any]:
    """The 2025-11-25 ``Task`` object (T11-5, T11-8)."""
    task = _common(state)
    task["ttl"] = state.ttl_ms
    if state.poll_interval_ms is not None:
        task["pollInterval"] = state.poll_interval_ms
    return task


def core_create_result(state: TaskState) -> dict[str, Any]:
    """T11-5: ``CreateTaskResult`` wraps the Task in ``task``."""
    return {"task": core_task(state)}


def core_capabilities() -> dict[str, Any]:
    """T11-1: list, cancel, and task-augmented tools/call."""
    return {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}


def related_task_meta(task_id: str) -> dict[str, Any]:
    return {META_RELATED_TASK: {"taskId": task_id}}


def core_status_notification(state: TaskState) -> dict[str, Any]:
    """T11-14: ``notifications/tasks/status`` with the full Task, without related-task ``_meta``."""
    return {"jsonrpc": "2.0", "method": "notifications/tasks/status", "params": core_task(state)}


def core_input_request(request_id: str, method: str, params: Mapping[str, Any], task_id: str) -> dict[str, Any]:
    """T11-11, T11-15: a task's request for input, tagged with the task it belongs to."""
    meta = {**(params.get("_meta") or {}), **related_task_meta(task_id)}
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": {**params, "_meta": meta}}


def requested_ttl(params: Mapping[str, Any]) -> tuple[bool, int | None]:
    """(whether the call is task-augmented, the requested ttl in ms or None) for 2025-11-25."""
    task = params.get("task")
    if task is None:
        return False, None
    if not isinstance(task, dict):
        raise invalid_params("tools/call params.task must be an object")
    ttl = task.get("ttl")
    if ttl is None:
        return True, None
    if isinstance(ttl, bool) or not isinstance(ttl, int | float) or ttl < 0:
        raise invalid_params("tools/call params.task.ttl must be a non-negative number of milliseconds")
    return True, int(ttl)


# --------------------------------------------------------------------------- 2026-07-28 extension


def ext_task(state: TaskState) -> dict[str, Any]:
    """The extension's ``Task`` (TX-3): ``ttlMs``/``pollIntervalMs`` instead of ``ttl``/``pollInterval``."""
    task = _common(state)
    task["ttlMs"] = state.ttl_ms
    if state.poll_interval_ms is not None:
        task["pollIntervalMs"] = state.poll_interval_ms
    return task


def ext_create_result(state: TaskState) -> dict[str, Any]:
    """TX-3: the Task flattened into the result with ``resultType: "task"``."""
    return {"resultType": "task", **ext_task(state)}


def ext_detailed(state: TaskState) -> dict[str, Any]:
    """TX-6: ``tasks/get`` carries the outstanding requests, the result or the error of a task."""
    task: dict[str, Any] = {"resultType": "complete", **ext_task(state)}
    if state.status == INPUT_REQUIRED:
        task["inputRequests"] = dict(state.input_requests or {})
    elif state.status == COMPLETED and state.result is not None:
        task["result"] = state.result
    elif state.status == FAILED:
        task["error"] = state.error or {"code": INTERNAL_ERROR, "message": state.status_message or "Task failed"}
    return task


def ext_capabilities() -> dict[str, Any]:
    """TX-1: advertised under ``capabilities.extensions``."""
    return {TASKS_EXTENSION: {}}


def client_declared_extension(client_capabilities: Mapping[str, Any]) -> bool:
    extensions = client_capabilities.get("extensions")
    return isinstance(extensions, dict) and isinstance(extensions.get(TASKS_EXTENSION), dict)


def extension_required() -> McpError:
    """TX-2/TX-11: the request needs the tasks extension the client did not declare."""
    return McpError(
        MISSING_REQUIRED_CLIENT_CAPABILITY,
        f"This request needs the {TASKS_EXTENSION} extension; declare it in clientCapabilities.extensions",
        data={"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}},
        http_status=400,
    )


# --------------------------------------------------------------------------- shared


def task_not_found() -> McpError:
    """T11-9/TX-6: unknown, expired and foreign ids all get the same -32602."""
    return invalid_params("Task not found (unknown or expired task id)")


def task_id_param(params: Mapping[str, Any]) -> str:
    task_id = params.get("taskId")
    if not isinstance(task_id, str) or not task_id:
        raise invalid_params("params.taskId must be a non-empty string")
    return task_id


def failed_on_error(rev: Revision, is_error: bool) -> bool:
    """T11-17 vs TX-9: an ``isError`` result fails a 2025-11-25 task but completes an extension task."""
    return is_error and rev.core_tasks
