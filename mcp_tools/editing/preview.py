"""The exact ``tools/list`` entry of a saved tool for each protocol revision."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..catalog import compile_tool
from ..models import BINDING_FIELDS, WIRE_FIELDS, Tool
from ..protocol.shaping import shape_tool
from ..protocol.versions import SUPPORTED_VERSIONS, get_revision


@dataclass(frozen=True, slots=True)
class Entry:
    version: str
    entry: dict[str, Any]
    omitted: tuple[str, ...]  # fields of the tool this revision does not carry


_WIRE_KEYS = ("title", "outputSchema", "annotations", "icons", "execution")


def preview(tool: Tool, *, tasks_enabled: bool) -> list[Entry]:
    """What ``tools/list`` sends for ``tool`` (as saved) on each revision, newest first; built
    by the same ``compile_tool`` and ``shape_tool`` as the catalog."""
    row: dict[str, Any] = {name: getattr(tool, name) for name in (*WIRE_FIELDS, *BINDING_FIELDS)}
    row.update(pk=tool.pk, version=tool.version)
    spec = compile_tool(row).spec
    entries = [shape_tool(spec, get_revision(v), tasks_enabled=tasks_enabled) for v in SUPPORTED_VERSIONS]
    fullest = {key for entry in entries for key in entry}
    return [
        Entry(version, entry, tuple(k for k in _WIRE_KEYS if k in fullest and k not in entry))
        for version, entry in reversed(list(zip(SUPPORTED_VERSIONS, entries, strict=True)))
    ]
