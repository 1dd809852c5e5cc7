"""Form fields generated from a JSON Schema: each supported type, enums, required, defaults, the
fallback to JSON for what a form cannot edit, and the object assembled back and validated."""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from django import forms

from mcp_tools.admin.schema_forms import EnumField, SchemaFields

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Name", "description": "Who", "minLength": 2, "maxLength": 5},
        "color": {"type": "string", "enum": ["red", "blue"], "default": "blue"},
        "size": {"type": "integer", "minimum": 1, "maximum": 10, "default": 3},
        "ratio": {"type": "number", "maximum": 1},
        "loud": {"type": "boolean", "default": True},
        "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b", "c"]}},
        "day": {"type": "string", "format": "date"},
        "at": {"type": "string", "format": "date-time"},
        "mail": {"type": "string", "format": "email"},
        "level": {"type": "integer", "enum": [1, 2, 3]},
        "site": {"type": "string", "format": "uri", "x-mcp-header": "Site"},
    },
    "required": ["name", "level"],
    "additionalProperties": False,
}


def _form(group: SchemaFields, data: dict[str, Any] | None = None) -> forms.Form:
    form = forms.Form(data)
    form.fields.update(group.fields)
    return form


def test_each_supported_type_becomes_its_field() -> None:
    group = SchemaFields(SCHEMA, "p__")
    f = group.fields
    assert group.names == [f"p__{name}" for name in SCHEMA["properties"]]
    assert type(f["p__name"]) is forms.CharField
    assert (f["p__name"].label, f["p__name"].help_text, f["p__name"].required) == ("Name", "Who", True)
    assert (f["p__name"].min_length, f["p__name"].max_length) == (2, 5)  # type: ignore[attr-defined]
    assert isinstance(f["p__color"], EnumField)
    assert f["p__color"].choices == [("", "---------"), ("red", "red"), ("blue", "blue")]  # type: ignore[attr-defined]
    assert (f["p__color"].initial, f["p__color"].required, f["p__color"].label) == ("blue", False, "color")
    assert type(f["p__size"]) is forms.IntegerField
    assert (f["p__size"].min_value, f["p__size"].max_value, f["p__size"].initial) == (1, 10, 3)  # type: ignore[attr-defined]
    assert type(f["p__ratio"]) is forms.FloatField
    assert type(f["p__loud"]) is forms.BooleanField
    assert (f["p__loud"].required, f["p__loud"].initial) == (False, True)
    assert type(f["p__tags"]) is forms.MultipleChoiceField
    assert f["p__tags"].choices == [("a", "a"), ("b", "b"), ("c", "c")]  # type: ignore[attr-defined]
    assert type(f["p__day"]) is forms.DateField
    assert type(f["p__mail"]) is forms.EmailField
    assert type(f["p__site"]) is forms.CharField  # uri: left to the schema
    assert f["p__level"].required is True
    assert f["p__level"].choices == [("", "---------"), ("1", "1"), ("2", "2"), ("3", "3")]  # type: ignore[attr-defined]


def test_the_object_is_assembled_with_types_and_empty_optional_fields_left_out() -> None:
    group = SchemaFields(SCHEMA, "p__")
    data = {"p__name": "Ann", "p__level": "2", "p__size": "4", "p__ratio": "0.5", "p__tags": ["a", "c"]}
    data |= {"p__day": "2026-01-31", "p__at": "2026-01-31T12:00:00Z", "p__mail": "", "p__color": ""}
    form = _form(group, data)
    assert form.is_valid(), form.errors
    value = group.assemble(form.cleaned_data)
    assert value == {
        "name": "Ann",
        "level": 2,
        "size": 4,
        "ratio": 0.5,
        "loud": False,  # an unchecked box is false
        "tags": ["a", "c"],
        "day": "2026-01-31",
        "at": "2026-01-31T12:00:00Z",
    }
    assert group.check(form, value, fallback=None)


def test_a_stored_object_round_trips_through_the_fields() -> None:
    group = SchemaFields(SCHEMA, "p__")
    stored = {"name": "Bo", "level": 3, "color": "red", "size": 2, "loud": True, "tags": ["b"], "day": "2026-02-01"}
    initial = group.initial(stored)
    assert initial["p__level"] == "3"
    assert initial["p__day"] == datetime.date(2026, 2, 1)
    form = _form(group)
    form.initial = initial
    data = {name: form[name].value() for name in group.names}
    data = {k: v for k, v in data.items() if v not in (None, False)}
    bound = _form(group, {k: (v.isoformat() if isinstance(v, datetime.date) else v) for k, v in data.items()})
    bound.initial = initial
    assert bound.is_valid(), bound.errors
    assert group.assemble(bound.cleaned_data) == stored
    assert not group.changed(bound)


def test_required_and_bounds_are_form_errors_and_schema_errors_land_on_their_field() -> None:
    group = SchemaFields(SCHEMA, "p__")
    form = _form(group, {"p__name": "A", "p__size": "11", "p__at": "yesterday"})
    assert not form.is_valid()
    assert form.errors["p__level"] == ["This field is required."]
    assert form.errors["p__size"] == ["Ensure this value is less than or equal to 10."]
    assert form.errors["p__name"] == ["Ensure this value has at least 2 characters (it has 1)."]
    assert form.errors["p__at"] == ["Enter a date and time such as 2026-01-31T12:00:00Z."]
    # A value outside an enum is a form error, also when asking whether the field changed.
    form = _form(group, {"p__name": "Ann", "p__level": "9", "p__color": "green"})
    assert group.changed(form)
    assert form.errors["p__level"] == ["Select a valid choice. 9 is not one of the available choices."]
    assert form.errors["p__color"] == ["Select a valid choice. green is not one of the available choices."]
    # What only the schema says (here a multipleOf) is checked on the assembled object.
    group = SchemaFields({"type": "object", "properties": {"n": {"type": "integer", "multipleOf": 5}}}, "q__")
    form = _form(group, {"q__n": "7"})
    assert form.is_valid()
    assert not group.check(form, group.assemble(form.cleaned_data), fallback=None)
    assert form.errors["q__n"] == ["7 is not a multiple of 5"]


def test_a_value_no_longer_offered_is_kept_as_a_choice_marked_so() -> None:
    group = SchemaFields({"type": "object", "properties": {"task": {"type": "string", "enum": ["a"]}}}, "c__")
    assert group.initial({"task": "gone"}) == {"c__task": "gone"}
    assert ("gone", "gone (not available)") in group.fields["c__task"].choices  # type: ignore[attr-defined]


def test_stored_values_of_another_type_are_not_shown_and_break_nothing() -> None:
    group = SchemaFields(SCHEMA, "p__")
    stored = {"name": 5, "size": "big", "loud": "yes", "tags": 3, "day": 7, "level": [1]}
    assert group.initial(stored) == {}
    form = _form(group, {"p__name": "Ann", "p__level": "1"})
    form.initial = group.initial(stored)
    assert group.changed(form)
    assert form.is_valid()


@pytest.mark.parametrize(
    "schema",
    [
        None,
        {"type": "array"},
        {"type": "object"},  # nothing to show
        {"type": "object", "properties": {"a": {"type": "object", "properties": {}}}},
        {"type": "object", "properties": {"a": {"type": "array", "items": {"type": "object"}}}},
        {"type": "object", "properties": {"a": {"type": "array", "items": {"type": "string"}}}},
        {"type": "object", "properties": {"a": {"oneOf": [{"type": "string"}, {"type": "integer"}]}}},
        {"type": "object", "properties": {"a": {"type": ["string", "integer"]}}},
        {"type": "object", "properties": {"a": {"type": "string", "oneOf": [{"minLength": 1}]}}},
        {"type": "object", "properties": {"a": {"$ref": "#/$defs/x"}}, "$defs": {"x": {"type": "string"}}},
        {"type": "object", "properties": {"a": {"type": "string"}}, "anyOf": [{"required": ["a"]}]},
        {"type": "object", "properties": {"a": {"type": "string", "enum": ["x", 1]}}},
        {"type": "object", "properties": {"a": {"type": "null"}}},
        # Not valid schemas (a row saved by code skips the checks): JSON, never an exception.
        {"type": "object", "properties": {"a": {"type": "string", "maxLength": "5"}}},
        {"type": "object", "properties": {"a": {"type": "integer", "minimum": True}}},
        {"type": "object", "properties": {"a": {"type": "string"}}, "required": [["a"]]},
        {"type": "object", "properties": {"a": {"type": "string", "pattern": "["}}},
        {"$schema": "https://example.com/mine", "type": "object", "properties": {"a": {"type": "string"}}},
    ],
)
def test_what_a_form_cannot_edit_falls_back_to_json(schema: Any) -> None:
    assert SchemaFields.build(schema, "p__") is None
