"""The discovery tools: ``search_tools`` and ``describe_tools``, served beside the catalog's rows.

They are ordinary tools to a client (listed, called with ``tools/call``, rate limited and audited
like any other) but no rows: the services answer them here, with the caller's grant. Short,
strict input schemas; results carry what a model needs to choose a tool (name, title, a short
description, its arguments at a glance, its hints) and then to call it (``describe_tools``: the
definition exactly as ``tools/list`` would give it for the negotiated revision).
"""

from __future__ import annotations

from typing import Any

from ..catalog import Catalog, CompiledTool, VisibilityCheck
from ..protocol.shaping import ToolSpec, shape_tool
from ..protocol.versions import Revision
from ..types import Principal, ToolResult
from .searching import MAX_QUERY_CHARS, search, usable

__all__ = [
    "BUILTINS",
    "DESCRIBE_NAME",
    "NAMES",
    "SEARCH_NAME",
    "answer",
    "hit",
    "is_builtin",
]

SEARCH_NAME = "search_tools"
DESCRIBE_NAME = "describe_tools"
KIND_PREFIX = "mcp_tools.discovery."
DEFAULT_LIMIT = 5
MAX_LIMIT = 20
MAX_DESCRIBE = 10
# What a search result says of each tool: the description's start, and its first arguments.
SUMMARY_CHARS = 300
MAX_ARGUMENTS = 12

_READ_ONLY = {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True, "openWorldHint": False}

_HIT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "Call the tool by this name."},
        "title": {"type": "string"},
        "description": {"type": "string", "description": "The start of its description."},
        "arguments": {"type": "string", "description": "Its arguments: name, ? when optional, and type."},
        "readOnly": {"type": "boolean"},
        "destructive": {"type": "boolean"},
    },
    "required": ["name", "description", "arguments"],
}

SEARCH_SPEC = ToolSpec(
    name=SEARCH_NAME,
    title="Search tools",
    description=(
        "Find the tools of this server that fit a task. Only a few tools are listed; every other tool you may "
        "use is found here and then called by its exact name, like a listed tool. Describe the task in a few "
        'words ("overdue invoices", "add a book") or give a tool\'s name; the best matches come first, each '
        "with its arguments. describe_tools gives a tool's full input schema."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "query": {
                "type": "string",
                "minLength": 1,
                "maxLength": MAX_QUERY_CHARS,
                "description": "What you want to do, in a few words, or a tool's name.",
            },
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_LIMIT,
                "description": f"How many tools at most (default {DEFAULT_LIMIT}).",
            },
        },
        "required": ["query"],
        "additionalProperties": False,
    },
    output_schema={
        "type": "object",
        "properties": {
            "tools": {"type": "array", "items": _HIT_SCHEMA},
            "more": {"type": "boolean", "description": "More tools matched: raise limit or add words."},
            "note": {"type": "string"},
        },
        "required": ["tools", "more"],
    },
    annotations={**_READ_ONLY, "title": "Search tools"},
)

DESCRIBE_SPEC = ToolSpec(
    name=DESCRIBE_NAME,
    title="Describe tools",
    description=(
        f"The full definitions of up to {MAX_DESCRIBE} tools by exact name (input schema, output schema, hints), "
        "as the tool list would give them, to call them right. Names you cannot use come back under unknown."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "names": {
                "type": "array",
                "items": {"type": "string", "minLength": 1, "maxLength": 128},
                "minItems": 1,
                "maxItems": MAX_DESCRIBE,
                "uniqueItems": True,
                "description": "Tool names, as search_tools gave them.",
            }
        },
        "required": ["names"],
        "additionalProperties": False,
    },
    output_schema={
        "type": "object",
        "properties": {
            "tools": {"type": "array", "items": {"type": "object"}},
            "unknown": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["tools", "unknown"],
    },
    annotations={**_READ_ONLY, "title": "Describe tools"},
)


def _compiled(pk: int, spec: ToolSpec, kind: str) -> CompiledTool:
    return CompiledTool(
        pk=pk,
        version=1,
        spec=spec,
        handler_key=KIND_PREFIX + kind,
        handler_config={},
        required_scopes=frozenset(),
        param_headers=(),
    )


# Not rows: ids below any row's.
SEARCH_TOOL = _compiled(-1, SEARCH_SPEC, "search")
DESCRIBE_TOOL = _compiled(-2, DESCRIBE_SPEC, "describe")
BUILTINS: dict[str, CompiledTool] = {SEARCH_NAME: SEARCH_TOOL, DESCRIBE_NAME: DESCRIBE_TOOL}
NAMES = tuple(BUILTINS)


def is_builtin(tool: CompiledTool) -> bool:
    return BUILTINS.get(tool.name) is tool


def answer(
    tool: CompiledTool,
    arguments: dict[str, Any],
    *,
    catalog: Catalog,
    principal: Principal,
    visible: VisibilityCheck,
    rev: Revision,
    tasks_enabled: bool,
    apps: bool,
) -> ToolResult:
    """The result of a call of a discovery tool (``arguments`` already checked against its schema)."""
    if tool is SEARCH_TOOL:
        limit = arguments.get("limit", DEFAULT_LIMIT)
        found = search(catalog, principal, visible, arguments["query"], limit, exclude=NAMES)
        structured: dict[str, Any] = {"tools": [hit(t) for t in found.tools], "more": found.more}
        if not found.tools:
            structured["note"] = "No tool matched: try other or fewer words, or a tool's exact name."
        return ToolResult(structured_content=structured)
    tools, unknown = [], []
    for name in arguments["names"]:
        found_tool = BUILTINS.get(name) or catalog.get(name)
        if found_tool is not None and (is_builtin(found_tool) or usable(found_tool, principal, visible)):
            tools.append(shape_tool(found_tool.spec, rev, tasks_enabled=tasks_enabled, apps=apps))
        else:
            unknown.append(name)  # not found and not usable alike
    return ToolResult(structured_content={"tools": tools, "unknown": unknown})


def hit(tool: CompiledTool) -> dict[str, Any]:
    """One search result: what a model chooses by, and what it calls with."""
    spec = tool.spec
    found: dict[str, Any] = {"name": spec.name}
    if spec.title:
        found["title"] = spec.title
    found["description"] = summary(spec.description)
    found["arguments"] = signature(spec.input_schema)
    for key, hint in (("readOnly", "readOnlyHint"), ("destructive", "destructiveHint")):
        value = spec.annotations.get(hint)
        if isinstance(value, bool):
            found[key] = value
    return found


def summary(description: str) -> str:
    """The description's start: whole sentences within SUMMARY_CHARS when it is longer."""
    text = " ".join(description.split())
    if len(text) <= SUMMARY_CHARS:
        return text
    cut = text[:SUMMARY_CHARS]
    end = cut.rfind(". ")
    return cut[: end + 1] if end > SUMMARY_CHARS // 3 else cut.rstrip() + "..."


def signature(schema: Any) -> str:
    """``title: string, limit?: integer`` from an input schema's top-level properties."""
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(properties, dict) or not properties:
        return "none"
    required = schema.get("required")
    required = set(required) if isinstance(required, list) else set()
    parts = [
        f"{name}{'' if name in required else '?'}: {_type_of(prop)}"
        for name, prop in list(properties.items())[:MAX_ARGUMENTS]
    ]
    if len(properties) > MAX_ARGUMENTS:
        parts.append(f"... ({len(properties) - MAX_ARGUMENTS} more: describe_tools)")
    return ", ".join(parts)


def _type_of(prop: Any) -> str:
    if not isinstance(prop, dict):
        return "any"
    enum = prop.get("enum")
    if isinstance(enum, list) and 0 < len(enum) <= 6:
        return " | ".join(_short(value) for value in enum)
    kind = prop.get("type")
    if isinstance(kind, list):
        kinds = [k for k in kind if isinstance(k, str)]
        return " | ".join(kinds) if kinds else "any"
    if kind == "array":
        return f"array of {_type_of(prop.get('items'))}"
    if isinstance(kind, str):
        return kind
    return _alternatives(prop)


def _alternatives(prop: dict[str, Any]) -> str:
    """The types of the first anyOf (or oneOf) options, each once; "any" without them."""
    for key in ("anyOf", "oneOf"):
        options = prop.get(key)
        if isinstance(options, list) and options:
            return " | ".join(dict.fromkeys(_type_of(option) for option in options[:4]))
    return "any"


def _short(value: Any) -> str:
    text = f'"{value}"' if isinstance(value, str) else str(value).lower() if isinstance(value, bool) else str(value)
    return text if len(text) <= 40 else text[:37] + "..."
