"""The task methods (tasks/get, tasks/result, tasks/list, tasks/cancel, tasks/update)."""

from __future__ import annotations

from typing import Any

from .. import approvals
from ..asking import AnswerRefused, record_task_answers
from ..conf import mcp_settings
from ..protocol import errors as e
from ..protocol import task_wire
from ..protocol.errors import McpError
from ..protocol.jsonrpc import Request
from ..protocol.shaping import shape_result
from ..tasking import StillWorking, recovery
from ..tasking import service as tasking
from ..tasking.results import load_result
from .exchange import Exchange, complete
from .identity import cursor_key

__all__ = [
    "cancel",
    "get",
    "list",
    "result",
    "update",
]


def _task_request(ex: Exchange) -> None:
    """TX-11: the extension's task methods need the extension declared in this request."""
    if ex.modern is not None and not task_wire.client_declared_extension(ex.modern.client_capabilities):
        raise task_wire.extension_required()


def get(req: Request, ex: Exchange) -> bytes:
    _task_request(ex)
    task = tasking.find_task(req.params, ex.principal)
    task = recovery.recover(approvals.settle_task(task))  # its approval may be overdue, its worker gone
    state = tasking.state_of(task, ex.revision)
    if ex.revision.modern:
        return complete(req, ex, task_wire.ext_detailed(state))
    return complete(req, ex, task_wire.core_task(state))


def result(req: Request, ex: Exchange) -> bytes:
    """T11-10: block until terminal, then answer what tools/call would have, with related-task meta."""
    task = approvals.settle_task(tasking.find_task(req.params, ex.principal))
    task = recovery.note_unclaimed(task)  # no worker has started it: said in tasks/get and the log
    # Meanwhile its requests for input go out on this response's stream (T11-11).
    try:
        task = tasking.terminal_or_wait(task, ex.wait_until, ex.watch)
    except StillWorking as pending:
        pending.principal = ex.principal  # the transport's wait holds one of their stream slots
        raise
    if task.error_code is not None:
        raise McpError(task.error_code, task.error_message)
    if task.result is None:
        raise e.invalid_params(f"Task {task.pk} was cancelled and has no result")
    result = shape_result(load_result(task.result), ex.revision)
    result["_meta"] = {**(result.get("_meta") or {}), **task_wire.related_task_meta(task.pk)}
    return complete(req, ex, result)


def list(req: Request, ex: Exchange) -> bytes:
    page, next_cursor = tasking.list_page(
        ex.principal, req.params.get("cursor"), cursor_key(), int(mcp_settings.PAGE_SIZE)
    )
    result: dict[str, Any] = {"tasks": [task_wire.core_task(tasking.state_of(t, ex.revision)) for t in page]}
    if next_cursor is not None:
        result["nextCursor"] = next_cursor
    return complete(req, ex, result)


def cancel(req: Request, ex: Exchange) -> bytes:
    _task_request(ex)
    task = tasking.find_task(req.params, ex.principal)
    cancelled = tasking.cancel(task)
    if cancelled:
        approvals.task_cancelled(task.pk)
    if ex.revision.modern:
        # TX-8: an empty acknowledgement; cancellation is eventually consistent.
        return complete(req, ex, {})
    if not cancelled:
        # T11-13: a terminal task cannot be cancelled.
        raise e.invalid_params(f"Cannot cancel task {task.pk}: it is already {task.status}")
    task.refresh_from_db()
    return complete(req, ex, task_wire.core_task(tasking.state_of(task, ex.revision)))


def update(req: Request, ex: Exchange) -> bytes:
    """TX-7: the answers to the task's outstanding requests, by key; an empty acknowledgement.

    The waiting worker (any process) reads them from the database and the task goes back to
    ``working``: eventually consistent, as the extension allows. Keys that are not outstanding
    are ignored; a malformed answer to an outstanding one is -32602 and stores nothing.
    """
    _task_request(ex)
    task = tasking.find_task(req.params, ex.principal)
    responses = req.params.get("inputResponses")
    if not isinstance(responses, dict):
        raise e.invalid_params("tasks/update needs params.inputResponses (an object)")
    try:
        record_task_answers(task.pk, ex.principal.key, responses)
    except AnswerRefused as exc:
        raise e.invalid_params(exc.message) from exc
    return complete(req, ex, {})
