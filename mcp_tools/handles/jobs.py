"""The Celery task that purges expired handles (imported by ``mcp_tools.tasks`` only)."""

from __future__ import annotations

from celery import shared_task

from .store import purge_expired

__all__ = ["purge_expired_handles"]


@shared_task(name="mcp_tools.purge_expired_handles", ignore_result=True)  # type: ignore[untyped-decorator]
def purge_expired_handles() -> int:
    handles, requests = purge_expired()
    return handles + requests
