"""The beat task that expires undecided approvals (their held tasks end with the refusal).

Schedule ``mcp_tools.expire_approvals`` with Celery beat (the demo's ``CELERY_BEAT_SCHEDULE``);
without it a held task still expires when its owner reads it (``tasks/get``, ``tasks/result``)
and a plain call expires its own row.
"""

from __future__ import annotations

from celery import shared_task

from .flow import expire_due

__all__ = ["expire_approvals"]


@shared_task(name="mcp_tools.expire_approvals", ignore_result=True)  # type: ignore[untyped-decorator]
def expire_approvals() -> int:
    return expire_due()
