"""Approval-gated tools: calls that wait for a person's decision (``flow``) and the beat task
that expires undecided ones (``jobs``, imported only where Celery is installed)."""

from __future__ import annotations

from .flow import (
    AWAITING,
    Decided,
    DecisionRefused,
    await_decision,
    claim,
    decide,
    expire_due,
    hold_task,
    may_decide,
    redact,
    refusal,
    request,
    settle_task,
    task_cancelled,
    timeout_of,
)

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
