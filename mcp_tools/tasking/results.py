"""A task's result in the row: the revision-neutral form a ``ToolResult`` is stored in."""

from __future__ import annotations

from typing import Any

from ..types import ToolResult

__all__ = ["load_result", "store_result"]


def store_result(result: ToolResult) -> dict[str, Any]:
    """A ToolResult in the row's revision-neutral form."""
    stored: dict[str, Any] = {"content": result.content, "isError": result.is_error}
    if result.has_structured:
        stored["structured"] = result.structured_content
    if result.meta:
        stored["meta"] = result.meta
    return stored


def load_result(stored: dict[str, Any]) -> ToolResult:
    result = ToolResult(content=list(stored.get("content") or []), is_error=bool(stored.get("isError")))
    if "structured" in stored:
        result.structured_content = stored["structured"]
    if stored.get("meta"):
        result.meta = dict(stored["meta"])
    return result
