"""Compiled acceptance checks for the simple JSON Schemas most tools have.

``jsonschema`` walks a schema through its generic keyword machinery on every call: for a small
argument object that is most of the cost of validating it. :func:`compile_check` turns a schema
built only from the keywords below into a plain Python predicate, once per tool version, that
says whether an instance is valid. It answers exactly as ``jsonschema`` does for every schema it
accepts (``tests/unit/test_fastcheck.py`` checks that on generated schemas and instances); a
schema with any other keyword gets ``None`` and is validated by ``jsonschema`` alone. Callers use
the predicate to let valid instances through and still ask ``jsonschema`` for the messages of an
invalid one.

Handled: ``type`` (a name or a list), ``properties``, ``required``, ``additionalProperties``
(a boolean or a schema), ``items`` (one schema), ``minItems``/``maxItems``,
``minLength``/``maxLength``, ``minimum``/``maximum``/``exclusiveMinimum``/``exclusiveMaximum``
(numbers), ``enum``/``const`` of strings, and keywords that assert nothing (``title``,
``description``, ``default``, ``examples``, ``format`` (not asserted by our validators),
``readOnly``, ``writeOnly``, ``deprecated``, ``$comment``, ``$schema`` and ``x-`` extensions).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["Check", "compile_check"]

Check = Callable[[Any], bool]

_ANNOTATIONS = frozenset(
    {"title", "description", "default", "examples", "format", "readOnly", "writeOnly", "deprecated", "$comment"}
)
_ASSERTIONS = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "minItems",
        "maxItems",
        "minLength",
        "maxLength",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "enum",
        "const",
    }
)


class _Unsupported(Exception):
    """The schema uses something this module does not compile."""


def compile_check(schema: Any) -> Check | None:
    """A predicate equal to "``jsonschema`` finds no error", or None for schemas outside the subset."""
    try:
        return _node(schema, root=True)
    except _Unsupported:
        return None


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _type_test(name: Any) -> Check:
    # The JSON types as jsonschema's default type checker defines them.
    if name == "string":
        return lambda x: isinstance(x, str)
    if name == "object":
        return lambda x: isinstance(x, dict)
    if name == "array":
        return lambda x: isinstance(x, list)
    if name == "boolean":
        return lambda x: isinstance(x, bool)
    if name == "null":
        return lambda x: x is None
    if name == "number":
        return _is_number
    if name == "integer":
        return lambda x: (isinstance(x, int) and not isinstance(x, bool)) or (isinstance(x, float) and x.is_integer())
    raise _Unsupported


def _node(schema: Any, *, root: bool = False) -> Check:
    if schema is True or schema == {}:
        return lambda x: True
    if schema is False:
        return lambda x: False
    if not isinstance(schema, dict):
        raise _Unsupported
    _only_known_keywords(schema, root=root)
    checks: list[Check] = []
    if "type" in schema:
        checks.append(_types_check(schema["type"]))
    checks.extend(_enum_checks(schema))
    checks.extend(_string_checks(schema))
    checks.extend(_number_checks(schema))
    checks.extend(_array_checks(schema))
    object_check = _object_check(schema)
    if object_check is not None:
        checks.append(object_check)
    if not checks:
        return lambda x: True
    if len(checks) == 1:
        return checks[0]
    every = tuple(checks)
    return lambda x: all(c(x) for c in every)


def _only_known_keywords(schema: dict[Any, Any], *, root: bool) -> None:
    for key in schema:
        if not isinstance(key, str):
            raise _Unsupported
        if key in _ASSERTIONS or key in _ANNOTATIONS or key.startswith("x-") or (root and key == "$schema"):
            continue
        raise _Unsupported


def _types_check(names: Any) -> Check:
    if isinstance(names, str):
        return _type_test(names)
    if isinstance(names, list) and names:
        tests = tuple(_type_test(n) for n in names)
        return lambda x: any(t(x) for t in tests)
    raise _Unsupported


def _enum_checks(schema: dict[str, Any]) -> list[Check]:
    checks: list[Check] = []
    for key in ("enum", "const"):  # each holds on its own when both are there
        if key not in schema:
            continue
        allowed = schema["enum"] if key == "enum" else [schema["const"]]
        if not isinstance(allowed, list) or not all(isinstance(a, str) for a in allowed):
            raise _Unsupported  # jsonschema's equality of numbers and booleans is not Python's
        checks.append(_one_of(frozenset(allowed)))
    return checks


def _one_of(choices: frozenset[str]) -> Check:
    return lambda x: isinstance(x, str) and x in choices


def _count(schema: dict[str, Any], key: str) -> int | None:
    value = schema.get(key)
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise _Unsupported
    return value


def _string_checks(schema: dict[str, Any]) -> list[Check]:
    low, high = _count(schema, "minLength"), _count(schema, "maxLength")
    if low is None and high is None:
        return []
    lo = low or 0
    hi = high if high is not None else -1
    return [lambda x: not isinstance(x, str) or (len(x) >= lo and (hi < 0 or len(x) <= hi))]


def _number_checks(schema: dict[str, Any]) -> list[Check]:
    checks: list[Check] = []
    for key, holds in (
        ("minimum", lambda x, b: x >= b),
        ("maximum", lambda x, b: x <= b),
        ("exclusiveMinimum", lambda x, b: x > b),
        ("exclusiveMaximum", lambda x, b: x < b),
    ):
        if key not in schema:
            continue
        bound = schema[key]
        if not _is_number(bound):
            raise _Unsupported  # draft-04's boolean exclusiveMinimum is not a supported dialect

        def check(x: Any, bound: Any = bound, holds: Callable[[Any, Any], bool] = holds) -> bool:
            return not _is_number(x) or holds(x, bound)

        checks.append(check)
    return checks


def _array_checks(schema: dict[str, Any]) -> list[Check]:
    checks: list[Check] = []
    low, high = _count(schema, "minItems"), _count(schema, "maxItems")
    if low is not None or high is not None:
        lo = low or 0
        hi = high if high is not None else -1
        checks.append(lambda x: not isinstance(x, list) or (len(x) >= lo and (hi < 0 or len(x) <= hi)))
    if "items" in schema:
        checks.append(_items_check(schema["items"]))
    return checks


def _items_check(items: Any) -> Check:
    if isinstance(items, list):
        raise _Unsupported  # draft-07 tuple validation
    item = _node(items)
    return lambda x: not isinstance(x, list) or all(item(i) for i in x)


def _object_check(schema: dict[str, Any]) -> Check | None:
    properties = schema.get("properties", {})
    required = schema.get("required", [])
    extra = schema.get("additionalProperties", True)
    if not isinstance(properties, dict) or not isinstance(required, list):
        raise _Unsupported
    if not all(isinstance(name, str) for name in required):
        raise _Unsupported
    if not properties and not required and extra is True:
        return None
    compiled = {name: _node(sub) for name, sub in properties.items()}
    needed = tuple(dict.fromkeys(required))
    others = None if extra is True else _node(extra)

    def check(x: Any) -> bool:
        if not isinstance(x, dict):
            return True
        for name in needed:
            if name not in x:
                return False
        for name, value in x.items():
            sub = compiled.get(name)
            if sub is not None:
                if not sub(value):
                    return False
            elif others is not None and not others(value):
                return False
        return True

    return check
