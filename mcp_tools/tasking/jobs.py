"""The Celery task that runs a tool call, as a ``shared_task`` so any host Celery app picks it up.

Celery's autodiscovery imports it through ``mcp_tools.tasks``. ``run_task`` acknowledges late and
is rejected (requeued) when its worker dies; a redelivered message whose task still runs elsewhere
(fresh heartbeat) does nothing, and one whose worker is gone is retried or failed per
``MCP_TOOLS["TASK_WORKER_LOST"]``. The periodic tasks are in ``beat.py``.
"""

from __future__ import annotations

from celery import current_task, shared_task

from ..threads import close_old_connections
from .worker import execute

__all__ = ["run_task"]


@shared_task(  # type: ignore[untyped-decorator]
    name="mcp_tools.run_task", acks_late=True, reject_on_worker_lost=True, ignore_result=True
)
def run_task(task_id: str, delivery: str | None = None) -> str:
    # Run eagerly (CELERY_TASK_ALWAYS_EAGER), the task runs inside the request that creates it:
    # its client cannot answer a question before it has the task, so the handler may not ask.
    eager = bool(getattr(current_task.request, "is_eager", False)) if current_task else False
    if not eager:
        # As Django between requests: a worker that reuses its connections between tasks
        # (Celery's CELERY_DB_REUSE_MAX) replaces an obsolete or broken one first.
        close_old_connections()
    return execute(task_id, delivery, can_ask=not eager)
