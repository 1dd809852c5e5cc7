"""Handles: expiring state a handler keeps between calls, addressed by opaque ids it hands out.

``kinds`` registers handle kinds in code (``handle_kind``); ``store`` is ``ctx.handles`` over
``McpHandle`` rows (imported by the runner, never at app import time); ``jobs`` is the Celery
purge task. Only ``kinds`` is imported here, so ``mcp_tools`` can export ``handle_kind``.
"""

from __future__ import annotations

from ..types import Handle, HandleKind
from .kinds import handle_kind, kinds

__all__ = ["Handle", "HandleKind", "handle_kind", "kinds"]
