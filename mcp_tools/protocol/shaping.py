"""Shape tools and tool results for the negotiated revision: no field a revision does not know."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from .apps import UiLink
from .versions import Revision

__all__ = [
    "ANNOTATION_KEYS",
    "TASK_SUPPORT_VALUES",
    "CallOutcome",
    "ToolSpec",
    "error_result",
    "output_schema_for",
    "shape_call_result",
    "shape_content",
    "shape_result",
    "shape_tool",
]

ANNOTATION_KEYS = ("title", "readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")
TASK_SUPPORT_VALUES = ("forbidden", "optional", "required")


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """What a client may learn about one tool, independent of the revision."""

    name: str
    input_schema: dict[str, Any]
    title: str = ""
    description: str = ""
    output_schema: dict[str, Any] | None = None
    annotations: dict[str, Any] = field(default_factory=dict)
    icons: tuple[dict[str, Any], ...] = ()
    task_support: str = "forbidden"
    ui: UiLink | None = None  # MCP Apps: its view, shown only to clients that declared the extension

    @property
    def object_output(self) -> bool:
        """Legacy revisions only know object-rooted output schemas (T-3)."""
        return self.output_schema is not None and self.output_schema.get("type") == "object"


def output_schema_for(spec: ToolSpec, rev: Revision) -> dict[str, Any] | None:
    if not rev.title_and_output_schema or spec.output_schema is None:
        return None
    if rev.any_output_schema or spec.object_output:
        return spec.output_schema
    return None


def shape_tool(spec: ToolSpec, rev: Revision, *, tasks_enabled: bool = False, apps: bool = False) -> dict[str, Any]:
    tool: dict[str, Any] = {"name": spec.name}
    if spec.title and rev.title_and_output_schema:
        tool["title"] = spec.title
    if spec.description:
        tool["description"] = spec.description
    tool["inputSchema"] = spec.input_schema
    output = output_schema_for(spec, rev)
    if output is not None:
        tool["outputSchema"] = output
    annotations = {k: spec.annotations[k] for k in ANNOTATION_KEYS if spec.annotations.get(k) is not None}
    if annotations:
        tool["annotations"] = annotations
    if spec.icons and rev.icons:
        tool["icons"] = list(spec.icons)
    # T-16: advertise "optional"/"required" only where the server declares core tasks.
    if rev.core_tasks and tasks_enabled and spec.task_support != "forbidden":
        tool["execution"] = {"taskSupport": spec.task_support}
    # MCP Apps: "If host does not support MCP Apps, tool behaves as standard tool": the link to
    # the view goes only to a client that declared io.modelcontextprotocol/ui.
    if apps and spec.ui is not None:
        tool["_meta"] = spec.ui.meta()
    return tool


def _shape_annotations(annotations: Any, rev: Revision) -> dict[str, Any] | None:
    if not isinstance(annotations, dict):
        return None
    keys = ("audience", "priority", "lastModified") if rev.content_last_modified else ("audience", "priority")
    shaped = {k: annotations[k] for k in keys if annotations.get(k) is not None}
    return shaped or None


_BLOCK_FIELDS: dict[str, tuple[str, ...]] = {
    "text": ("text",),
    "image": ("data", "mimeType"),
    "audio": ("data", "mimeType"),
    "resource": ("resource",),
    "resource_link": ("uri", "name", "title", "description", "mimeType", "size", "icons"),
}


def shape_content(block: dict[str, Any], rev: Revision) -> dict[str, Any]:
    """One content block for ``rev``; a resource link becomes text where links do not exist."""
    kind = block["type"]
    if kind == "resource_link" and not rev.resource_link:
        label = block.get("title") or block.get("name") or block["uri"]
        block = {"type": "text", "text": f"{label}: {block['uri']}", "annotations": block.get("annotations")}
        kind = "text"
    shaped: dict[str, Any] = {"type": kind}
    for key in _BLOCK_FIELDS[kind]:
        value = block.get(key)
        if value is None:
            continue
        if key == "icons" and not rev.icons:
            continue
        if key == "title" and not rev.title_and_output_schema:
            continue
        shaped[key] = value
    annotations = _shape_annotations(block.get("annotations"), rev)
    if annotations:
        shaped["annotations"] = annotations
    if rev.title_and_output_schema and isinstance(block.get("_meta"), dict):
        shaped["_meta"] = block["_meta"]
    return shaped


def shape_call_result(
    content: list[dict[str, Any]],
    rev: Revision,
    *,
    structured: Any = None,
    has_structured: bool = False,
    is_error: bool = False,
    meta: dict[str, Any] | None = None,
) -> dict[str, Any]:
    result: dict[str, Any] = {}
    if rev.modern:
        result["resultType"] = "complete"
    result["content"] = [shape_content(block, rev) for block in content]
    if has_structured and rev.title_and_output_schema and (rev.any_output_schema or isinstance(structured, dict)):
        result["structuredContent"] = structured
    if is_error:
        result["isError"] = True
    if meta:
        result["_meta"] = meta
    return result


def error_result(message: str, rev: Revision) -> dict[str, Any]:
    """A tool execution error (isError: true) the model can read and act on."""
    return shape_call_result([{"type": "text", "text": message}], rev, is_error=True)


class CallOutcome(Protocol):
    """What a handler's checked result holds (``mcp_tools.types.ToolResult``), read for shaping."""

    @property
    def content(self) -> Sequence[Any]: ...
    @property
    def structured_content(self) -> Any: ...
    @property
    def has_structured(self) -> bool: ...
    @property
    def is_error(self) -> bool: ...
    @property
    def meta(self) -> dict[str, Any] | None: ...


def shape_result(result: CallOutcome, rev: Revision) -> dict[str, Any]:
    """A checked tool result as the ``tools/call`` result of revision ``rev``."""
    return shape_call_result(
        list(result.content),
        rev,
        structured=result.structured_content,
        has_structured=result.has_structured,
        is_error=result.is_error,
        meta=result.meta,
    )
