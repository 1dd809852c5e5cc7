"""fastcheck's compiled predicates answer as jsonschema does, on every schema they accept."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis_jsonschema import from_schema
from jsonschema import Draft7Validator, Draft202012Validator

from mcp_tools.fastcheck import compile_check

NAMES = st.sampled_from(["a", "b", "text", "n", "é"])
TYPES = ["string", "integer", "number", "boolean", "null", "array", "object"]
JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-5, 5)
    | st.floats(-5, 5, allow_nan=False)
    | st.sampled_from([0.0, 1.0, -2.0, 3.0, 2.5])  # integral floats are integers to jsonschema
    | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(NAMES, inner, max_size=3),
    max_leaves=8,
)


def _leaf() -> st.SearchStrategy[dict[str, Any]]:
    string = st.fixed_dictionaries(
        {"type": st.just("string")},
        optional={
            "minLength": st.integers(0, 3),
            "maxLength": st.integers(0, 5),
            "enum": st.lists(st.text(max_size=3), min_size=1, max_size=3),
            "const": st.text(max_size=2),
            "description": st.text(max_size=5),
            "format": st.just("email"),
        },
    )
    number = st.fixed_dictionaries(
        {"type": st.sampled_from(["integer", "number"])},
        optional={
            "minimum": st.integers(-3, 3) | st.floats(-3, 3, allow_nan=False),
            "maximum": st.integers(-3, 3),
            "exclusiveMinimum": st.integers(-3, 3),
            "exclusiveMaximum": st.floats(-3, 3, allow_nan=False),
        },
    )
    # Lists in a schema (type, required) hold unique items, as the meta-schema demands: a
    # duplicate makes hypothesis-jsonschema refuse the schema (a SchemaError now and then).
    other = st.fixed_dictionaries(
        {"type": st.sampled_from(TYPES) | st.lists(st.sampled_from(TYPES), min_size=1, unique=True)}
    )
    return string | number | other | st.just({}) | st.just({"const": "x"})


SCHEMAS = st.recursive(
    _leaf(),
    lambda inner: (
        st.fixed_dictionaries(
            {"type": st.just("object"), "properties": st.dictionaries(NAMES, inner, max_size=3)},
            optional={
                "required": st.lists(NAMES, max_size=3, unique=True),
                "additionalProperties": st.booleans() | inner,
                "title": st.text(max_size=3),
            },
        )
        | st.fixed_dictionaries(
            {"type": st.just("array"), "items": inner},
            optional={"minItems": st.integers(0, 2), "maxItems": st.integers(0, 3)},
        )
    ),
    max_leaves=6,
)


def _valid(schema: dict[str, Any], instance: Any) -> bool:
    return not any(Draft202012Validator(schema).iter_errors(instance))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(SCHEMAS, st.lists(JSON, min_size=1, max_size=5))
def test_agrees_with_jsonschema_on_any_value(schema: dict[str, Any], instances: list[Any]) -> None:
    check = compile_check(schema)
    assert check is not None, schema
    for instance in instances:
        assert check(instance) == _valid(schema, instance), (schema, instance)
        assert check(instance) == (not any(Draft7Validator(schema).iter_errors(instance)))


def _bounds_agree(schema: Any) -> bool:
    """No lower bound above its upper bound anywhere in ``schema``: hypothesis-jsonschema raises
    InvalidArgument (rather than drawing nothing) for a property like minLength 1, maxLength 0."""
    if not isinstance(schema, dict):
        return True
    for low, high in (("minLength", "maxLength"), ("minItems", "maxItems")):
        if schema.get(low, 0) > schema.get(high, 10**9):
            return False
    lows = [schema[k] for k in ("minimum", "exclusiveMinimum") if isinstance(schema.get(k), int | float)]
    highs = [schema[k] for k in ("maximum", "exclusiveMaximum") if isinstance(schema.get(k), int | float)]
    if lows and highs and max(lows) >= min(highs):
        return False
    children = list((schema.get("properties") or {}).values()) + [
        schema.get("items"),
        schema.get("additionalProperties"),
    ]
    return all(_bounds_agree(child) for child in children)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(st.data())
def test_accepts_what_jsonschema_accepts(data: st.DataObject) -> None:
    """Random values are mostly invalid; values drawn from the schema itself cover the valid side."""
    schema = data.draw(SCHEMAS.filter(lambda s: s.get("type") == "object" and _bounds_agree(s)))
    instance = data.draw(from_schema(schema))
    check = compile_check(schema)
    assert check is not None
    assert check(instance) == _valid(schema, instance), (schema, instance)


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "string", "pattern": "^a"},
        {"$ref": "#/$defs/x", "$defs": {"x": {}}},
        {"anyOf": [{"type": "string"}]},
        {"enum": [1, True]},  # jsonschema's equality of numbers and booleans is not Python's
        {"type": "object", "patternProperties": {"^x": {}}},
        {"type": "array", "items": [{"type": "string"}]},
        {"type": "object", "properties": {"a": {"type": "string", "uniqueItems": True}}},
        {"type": "integer", "minimum": True},
        {"type": "madeup"},
        "not a schema",
    ],
)
def test_anything_else_is_left_to_jsonschema(schema: Any) -> None:
    assert compile_check(schema) is None


def test_the_demo_echo_schema_compiles() -> None:
    schema = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
    check = compile_check(schema)
    assert check is not None
    assert check({"text": "hi"})
    assert not check({})
    assert not check({"text": 3})
    assert not check([])


EDGE_VALUES = [True, False, 0, 1, -1, 1.0, 0.0, 1.5, None, "", "1", [], [1], {}, {"a": 1}]


@pytest.mark.parametrize("type_name", TYPES)
def test_json_types_as_jsonschema_has_them(type_name: str) -> None:
    """Booleans are not numbers, integral floats are integers (draft 6 and later)."""
    check = compile_check({"type": type_name})
    assert check is not None
    for value in EDGE_VALUES:
        assert check(value) == _valid({"type": type_name}, value), value
        assert check(value) == (not any(Draft7Validator({"type": type_name}).iter_errors(value))), value


def test_enum_and_const_together_both_hold() -> None:
    schema = {"type": "string", "enum": ["a", "b"], "const": "a"}
    check = compile_check(schema)
    assert check is not None
    for value in ("a", "b", "c", 1):
        assert check(value) == _valid(schema, value), value
