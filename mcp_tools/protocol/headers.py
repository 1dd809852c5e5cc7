"""2026-07-28 routing headers: Mcp-Method, Mcp-Name, Mcp-Param-* and x-mcp-header schemas."""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .errors import McpError, header_mismatch

# RFC 9110 token: 1*tchar.
_TCHAR = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")
# Header field values: visible ASCII and spaces/tabs, no control characters (RFC 9110 §5.5).
_FIELD_VALUE = re.compile(r"^[\x20-\x7e\t]*$")
_B64_SENTINEL = re.compile(r"^=\?base64\?([A-Za-z0-9+/=]*)\?=$")
_MAX_SAFE_INTEGER = 2**53 - 1

# Methods whose body carries the value that must be echoed in Mcp-Name (H-D6, TX-11).
NAME_PARAM: dict[str, str] = {
    "tools/call": "name",
    "resources/read": "uri",
    "prompts/get": "name",
    "tasks/get": "taskId",
    "tasks/update": "taskId",
    "tasks/cancel": "taskId",
}


def decode_value(raw: str, header: str) -> str:
    """Decode the ``=?base64?...?=`` sentinel (H-D6); other values must be plain field text."""
    match = _B64_SENTINEL.match(raw)
    if match:
        try:
            return base64.b64decode(match.group(1), validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError) as exc:
            raise header_mismatch(f"Header {header} has an invalid base64 value") from exc
    if not _FIELD_VALUE.match(raw):
        raise header_mismatch(f"Header {header} contains invalid characters")
    return raw.strip(" \t")


def check_routing_headers(headers: Mapping[str, str], method: str, params: Mapping[str, Any]) -> None:
    """H-D6: Mcp-Method on every request, Mcp-Name where the method names a target."""
    raw_method = headers.get("mcp-method")
    if raw_method is None:
        raise header_mismatch("Missing required header Mcp-Method")
    if decode_value(raw_method, "Mcp-Method") != method:
        raise header_mismatch(f"Header Mcp-Method does not match the body method {method!r}")
    key = NAME_PARAM.get(method)
    if key is None:
        return
    raw_name = headers.get("mcp-name")
    if raw_name is None:
        raise header_mismatch(f"Missing required header Mcp-Name for {method}")
    expected = params.get(key)
    if not isinstance(expected, str) or decode_value(raw_name, "Mcp-Name") != expected:
        raise header_mismatch(f"Header Mcp-Name does not match params.{key}")


@dataclass(frozen=True, slots=True)
class ParamHeader:
    """One ``x-mcp-header`` annotation: header suffix, argument path and JSON type."""

    name: str
    path: tuple[str, ...]
    type: str

    @property
    def header(self) -> str:
        return "mcp-param-" + self.name.lower()


class SchemaHeaderError(ValueError):
    """An x-mcp-header annotation breaks a rule of T-D7."""


_COMPOSITION = (
    "items",
    "prefixItems",
    "additionalProperties",
    "patternProperties",
    "oneOf",
    "anyOf",
    "allOf",
    "not",
    "if",
    "then",
    "else",
    "$defs",
    "definitions",
    "dependentSchemas",
    "contains",
    "propertyNames",
    "unevaluatedItems",
    "unevaluatedProperties",
)


def _walk_forbidden(node: Any, where: str) -> None:
    """No annotation may sit anywhere but along a chain of ``properties`` keys (T-D7 rule 5)."""
    if isinstance(node, dict):
        if "x-mcp-header" in node:
            raise SchemaHeaderError(
                f"x-mcp-header is only allowed on properties reached through 'properties' (found under {where})"
            )
        for value in node.values():
            _walk_forbidden(value, where)
    elif isinstance(node, list):
        for value in node:
            _walk_forbidden(value, where)


def extract_param_headers(schema: Mapping[str, Any]) -> tuple[ParamHeader, ...]:
    """Collect and validate every ``x-mcp-header`` in an input schema (T-D7 rules 1-5)."""
    found: list[ParamHeader] = []

    def visit(node: Mapping[str, Any], path: tuple[str, ...]) -> None:
        for key, value in node.items():
            if key == "properties" and isinstance(value, dict):
                for prop, sub in value.items():
                    if isinstance(sub, dict):
                        handle(sub, path + (prop,))
            elif key in _COMPOSITION or key == "$ref":
                _walk_forbidden(value, key)

    def handle(node: Mapping[str, Any], path: tuple[str, ...]) -> None:
        if "x-mcp-header" in node:
            value = node["x-mcp-header"]
            dotted = ".".join(path)
            if not isinstance(value, str) or not value:
                raise SchemaHeaderError(f"x-mcp-header on {dotted!r} must be a non-empty string")
            if not _TCHAR.match(value):
                raise SchemaHeaderError(f"x-mcp-header {value!r} on {dotted!r} must use RFC 9110 token characters only")
            kind = node.get("type")
            if kind not in ("string", "integer", "boolean"):
                raise SchemaHeaderError(
                    f"x-mcp-header on {dotted!r} needs a property of type string, integer or boolean"
                )
            found.append(ParamHeader(value, path, kind))
        visit(node, path)

    visit(schema, ())
    seen: set[str] = set()
    for item in found:
        lowered = item.name.lower()
        if lowered in seen:
            raise SchemaHeaderError(f"x-mcp-header {item.name!r} is used twice (names compare case-insensitively)")
        seen.add(lowered)
    return tuple(found)


def _lookup(arguments: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    node: Any = arguments
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key]
    return node


def check_param_headers(
    headers: Mapping[str, str], declared: tuple[ParamHeader, ...], arguments: Mapping[str, Any]
) -> None:
    """H-D7: each annotated argument present in the body must be mirrored in its header."""
    for item in declared:
        value = _lookup(arguments, item.path)
        raw = headers.get(item.header)
        if raw is not None:
            decoded = decode_value(raw, "Mcp-Param-" + item.name)
        if value is None:
            continue
        if raw is None:
            raise header_mismatch(f"Missing required header Mcp-Param-{item.name}")
        if not _same_value(decoded, value):
            raise header_mismatch(f"Header Mcp-Param-{item.name} does not match the argument value")


def _same_value(header: str, value: Any) -> bool:
    if isinstance(value, bool):
        return header == ("true" if value else "false")
    if isinstance(value, int | float):
        try:
            number = float(header) if any(c in header for c in ".eE") else int(header)
        except ValueError:
            return False
        return bool(abs(value) <= _MAX_SAFE_INTEGER and number == value)
    return isinstance(value, str) and header == value


__all__ = [
    "NAME_PARAM",
    "McpError",
    "ParamHeader",
    "SchemaHeaderError",
    "check_param_headers",
    "check_routing_headers",
    "decode_value",
    "extract_param_headers",
]
