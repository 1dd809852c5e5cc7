"""Handles: expiring state a handler keeps between calls, addressed by opaque ids it hands out.

``kinds`` registers handle types in code (``handle_type``); ``store`` is ``ctx.handles`` over
``McpHandle`` rows (imported by the runner, never at app import time); ``jobs`` is the Celery
purge task. Only ``kinds`` is imported here, so ``mcp_tools`` can export ``handle_type``.
"""

from __future__ import annotations

from ..types import Handle, HandleType
from .kinds import handle_type, kinds

__all__ = ["Handle", "HandleType", "handle_type", "kinds"]
