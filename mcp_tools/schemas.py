"""JSON Schema handling for tool schemas: dialects, checks on save, compiled validators."""

from __future__ import annotations

from typing import Any

from jsonschema import Draft7Validator, Draft201909Validator, Draft202012Validator
from jsonschema.exceptions import SchemaError
from jsonschema.protocols import Validator
from referencing import Registry

from .protocol.headers import SchemaHeaderError, extract_param_headers

# L-16: no $schema means 2020-12; these are the dialects we document as supported.
DIALECTS: dict[str, type[Validator]] = {
    "https://json-schema.org/draft/2020-12/schema": Draft202012Validator,
    "https://json-schema.org/draft/2019-09/schema": Draft201909Validator,
    "http://json-schema.org/draft-07/schema": Draft7Validator,
}
DEFAULT_DIALECT: type[Validator] = Draft202012Validator
# LD-12: an empty registry never retrieves anything over the network.
_OFFLINE = Registry()


def validator_class(schema: dict[str, Any]) -> type[Validator]:
    uri = schema.get("$schema")
    if uri is None:
        return DEFAULT_DIALECT
    if not isinstance(uri, str):
        raise ValueError("$schema must be a string")
    cls: type[Validator] | None = DIALECTS.get(uri.rstrip("#"))
    if cls is None:
        raise ValueError(f"Unsupported JSON Schema dialect {uri!r}; supported: {', '.join(DIALECTS)} (default 2020-12)")
    return cls


def compile_validator(schema: dict[str, Any]) -> Validator:
    return validator_class(schema)(schema, registry=_OFFLINE)


def _check(schema: Any, label: str) -> None:
    if not isinstance(schema, dict):
        raise ValueError(f"{label} must be a JSON object")
    cls = validator_class(schema)
    try:
        cls.check_schema(schema)
    except SchemaError as exc:
        where = "/".join(str(p) for p in exc.path)
        raise ValueError(f"{label} is not a valid schema{f' at {where}' if where else ''}: {exc.message}") from exc
    # LD-12: never fetch a $ref; a reference that is not local makes the schema invalid.
    for ref in _refs(schema):
        if not ref.startswith("#"):
            raise ValueError(f"{label} has a non-local $ref {ref!r}; only references inside the schema are allowed")
        if ref.startswith("#/") and not _pointer_exists(schema, ref[2:]):
            raise ValueError(f"{label} has a $ref {ref!r} that points nowhere")


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


def check_input_schema(schema: Any) -> None:
    """T-4, L-16, T-D7: an object-rooted, valid schema with well-formed x-mcp-header marks."""
    _check(schema, "Input schema")
    if schema.get("type") != "object":
        raise ValueError('Input schema must have "type": "object" at its root (tool arguments are objects)')
    try:
        extract_param_headers(schema)
    except SchemaHeaderError as exc:
        raise ValueError(str(exc)) from exc


def check_output_schema(schema: Any) -> None:
    _check(schema, "Output schema")


def error_messages(validator: Validator, instance: Any, *, limit: int = 5) -> list[str]:
    """Readable messages, each with the JSON path it concerns, so a model can fix its call."""
    messages = []
    for error in sorted(validator.iter_errors(instance), key=lambda e: list(e.absolute_path))[:limit]:
        where = "".join(f"[{p!r}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
        messages.append(f"{'arguments' + where}: {error.message}")
    return messages
