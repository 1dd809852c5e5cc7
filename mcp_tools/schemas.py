"""JSON Schema handling for tool schemas: dialects, checks on save, compiled validators."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from .protocol.headers import SchemaHeaderError, extract_param_headers

if TYPE_CHECKING:
    from jsonschema.protocols import Validator
    from referencing import Registry

# jsonschema (with referencing, attrs and rpds, about 8 MB a process) is imported on first use:
# a valid call of a tool with a simple schema never needs it (fastcheck answers), nor does
# tools/list; saving a tool, an invalid call and a complex schema do.

__all__ = [
    "DIALECTS",
    "check_input_schema",
    "check_output_schema",
    "compile_validator",
    "error_messages",
    "input_schema_problems",
    "output_schema_problems",
    "schema_problems",
]

# L-16: no $schema means 2020-12; these are the dialects we document as supported (the names
# of their validator classes in jsonschema).
DIALECTS: dict[str, str] = {
    "https://json-schema.org/draft/2020-12/schema": "Draft202012Validator",
    "https://json-schema.org/draft/2019-09/schema": "Draft201909Validator",
    "http://json-schema.org/draft-07/schema": "Draft7Validator",
}
DEFAULT_DIALECT = "https://json-schema.org/draft/2020-12/schema"


@functools.cache
def _offline() -> Registry:
    """LD-12: an empty registry never retrieves anything over the network."""
    from referencing import Registry

    return Registry()


def validator_class(schema: dict[str, Any]) -> type[Validator]:
    import jsonschema

    uri = schema.get("$schema")
    if uri is None:
        uri = DEFAULT_DIALECT
    if not isinstance(uri, str):
        raise ValueError("$schema must be a string")
    name = DIALECTS.get(uri.rstrip("#"))
    if name is None:
        raise ValueError(f"Unsupported JSON Schema dialect {uri!r}; supported: {', '.join(DIALECTS)} (default 2020-12)")
    cls: type[Validator] = getattr(jsonschema, name)
    return cls


def compile_validator(schema: dict[str, Any]) -> Validator:
    return validator_class(schema)(schema, registry=_offline())


def schema_problems(schema: Any, label: str) -> list[str]:
    """Every reason ``schema`` is not an acceptable schema, each with the JSON path it concerns
    (empty when it is fine): the whole meta-schema validation, not only its best match."""
    if not isinstance(schema, dict):
        return [f"{label} must be a JSON object"]
    try:
        cls = validator_class(schema)
    except ValueError as exc:
        return [f"{label}: {exc}"]
    from jsonschema.validators import validator_for

    # As ``check_schema`` does, but every error rather than the first.
    meta_cls = validator_for(cls.META_SCHEMA, default=cls)
    meta = meta_cls(cls.META_SCHEMA, format_checker=meta_cls.FORMAT_CHECKER)
    problems = [
        f"{label} is not a valid schema at {_where(error.absolute_path)}: {error.message}"
        for error in sorted(meta.iter_errors(schema), key=lambda e: [str(p) for p in e.absolute_path])
    ]
    if problems:
        return problems
    # LD-12: never fetch a $ref; a reference that is not local makes the schema invalid.
    for ref in _refs(schema):
        if not ref.startswith("#"):
            problems.append(f"{label} has a non-local $ref {ref!r}; only references inside the schema are allowed")
        elif ref.startswith("#/") and not _pointer_exists(schema, ref[2:]):
            problems.append(f"{label} has a $ref {ref!r} that points nowhere")
    return problems


def _where(path: Any) -> str:
    """A JSON Pointer for an error path (``/`` for the root)."""
    return "/" + "/".join(str(p).replace("~", "~0").replace("/", "~1") for p in path)


def _check(schema: Any, label: str) -> None:
    problems = schema_problems(schema, label)
    if problems:
        raise ValueError("; ".join(problems))


def _refs(node: Any) -> list[str]:
    found: list[str] = []
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                found.append(value)
            else:
                found.extend(_refs(value))
    elif isinstance(node, list):
        for value in node:
            found.extend(_refs(value))
    return found


def _pointer_exists(schema: Any, pointer: str) -> bool:
    node = schema
    for raw in pointer.split("/"):
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return False
    return True


def input_schema_problems(schema: Any) -> list[str]:
    """T-4, L-16, T-D7: an object-rooted, valid schema with well-formed x-mcp-header marks."""
    problems = schema_problems(schema, "Input schema")
    if problems:
        return problems
    if schema.get("type") != "object":
        return ['Input schema must have "type": "object" at its root (tool arguments are objects)']
    try:
        extract_param_headers(schema)
    except SchemaHeaderError as exc:
        return [str(exc)]
    return []


def output_schema_problems(schema: Any) -> list[str]:
    return schema_problems(schema, "Output schema")


def check_input_schema(schema: Any) -> None:
    """Raise ValueError naming every problem of an input schema."""
    problems = input_schema_problems(schema)
    if problems:
        raise ValueError("; ".join(problems))


def check_output_schema(schema: Any) -> None:
    _check(schema, "Output schema")


def error_messages(validator: Validator, instance: Any, *, limit: int = 5) -> list[str]:
    """Readable messages, each with the JSON path it concerns, so a model can fix its call."""
    messages = []
    for error in sorted(validator.iter_errors(instance), key=lambda e: list(e.absolute_path))[:limit]:
        where = "".join(f"[{p!r}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
        messages.append(f"{'arguments' + where}: {error.message}")
    return messages
