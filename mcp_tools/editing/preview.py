"""The exact ``tools/list`` entry of a saved tool for each protocol revision, its view as a client
reads it, and which tools the view may call in the admin's preview."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..catalog import CompiledTool, compile_tool
from ..models import BINDING_FIELDS, UI_FIELDS, WIRE_FIELDS, Tool, UiVisibility
from ..protocol.apps import UiResourceMeta
from ..protocol.shaping import shape_tool
from ..protocol.versions import SUPPORTED_VERSIONS, get_revision
from ..ui import render_document

__all__ = ["preview", "ui_document", "view_call_refusal"]


@dataclass(frozen=True, slots=True)
class Entry:
    version: str
    entry: dict[str, Any]
    omitted: tuple[str, ...]  # fields of the tool this revision does not carry


_WIRE_KEYS = ("title", "outputSchema", "annotations", "icons", "execution")


def preview(tool: Tool, *, tasks_enabled: bool) -> list[Entry]:
    """What ``tools/list`` sends for ``tool`` (as saved) on each revision, newest first; built
    by the same ``compile_tool`` and ``shape_tool`` as the catalog."""
    spec = _compiled(tool).spec
    # As a client that declared MCP Apps sees it (others get no _meta.ui: see the how-to).
    entries = [shape_tool(spec, get_revision(v), tasks_enabled=tasks_enabled, apps=True) for v in SUPPORTED_VERSIONS]
    fullest = {key for entry in entries for key in entry}
    return [
        Entry(version, entry, tuple(k for k in _WIRE_KEYS if k in fullest and k not in entry))
        for version, entry in reversed(list(zip(SUPPORTED_VERSIONS, entries, strict=True)))
    ]


def _compiled(tool: Tool) -> CompiledTool:
    row: dict[str, Any] = {name: getattr(tool, name) for name in (*WIRE_FIELDS, *BINDING_FIELDS, *UI_FIELDS)}
    row.update(pk=tool.pk, version=tool.version)
    return compile_tool(row)


def ui_document(tool: Tool) -> tuple[str, UiResourceMeta | None]:
    """The saved tool's view as ``resources/read`` sends it (the document, its ``_meta.ui``);
    raises ``ui.render.UiRenderError`` when it cannot be rendered, LookupError without a view."""
    compiled = _compiled(tool)
    if compiled.spec.ui is None:
        raise LookupError("The tool has no view")
    return render_document(compiled.ui_source()), compiled.ui_meta


def view_call_refusal(tool: Tool, name: str) -> str | None:
    """Why the view of ``tool`` may not call the tool ``name`` through the admin's preview host,
    or None: a view calls only the tools it declares (``Tool.ui_tools``, reviewed with its
    revisions), and, as the MCP Apps extension requires of a host, never a tool whose
    visibility leaves out the app. A declared name that is no tool is left to the call (the
    same answer as any unknown tool)."""
    declared = tool.ui_tools if isinstance(tool.ui_tools, list) else []
    if name not in declared:
        return (
            f"The view of {tool.name} does not declare the tool {name[:128]!r} among the tools it may call "
            '(its "tools the view may call"): not called.'
        )
    visibility = Tool.objects.filter(name=name).values_list("ui_visibility", flat=True).first()
    if visibility == UiVisibility.MODEL:
        return f"The tool {name!r} is visible to the model only, not to apps: a view may not call it."
    return None
