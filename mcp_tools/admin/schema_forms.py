"""Form fields generated from a JSON Schema object, and the object assembled back from them.

A schema is *form-able* when it is an object whose properties are all simple: a string (an
``enum`` becomes a choice; ``format`` ``date`` a date field, ``email`` an email field, others a
text field left to the schema), an integer or a number (an ``enum`` becomes a choice), a boolean
(a checkbox: unchecked is ``false``), or an array of strings from an ``enum`` (checkboxes). The
``title`` is the label, the ``description`` the help text and the ``default`` the initial value.
Anything else anywhere (nested objects, arrays of objects, ``oneOf``, a list of types, ``$ref``...)
makes the whole schema not form-able: the caller falls back to its JSON box, so nothing a schema
allows is ever out of reach of the form that edits it.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Iterable
from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.utils.dateparse import parse_datetime

from ..schemas import compile_validator, schema_problems

__all__ = ["SchemaFields"]

# Keywords that say nothing about the shape of a value (x-... extensions are allowed too).
_ANNOTATIONS = frozenset(
    {"title", "description", "default", "examples", "readOnly", "writeOnly", "deprecated", "$comment"}
)
_BY_TYPE = {
    "string": frozenset({"enum", "format", "minLength", "maxLength", "pattern"}),
    "integer": frozenset({"enum", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"}),
    "number": frozenset({"enum", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"}),
    "boolean": frozenset(),
    "array": frozenset({"items", "minItems", "maxItems", "uniqueItems"}),
}
_OBJECT_KEYS = frozenset({"type", "properties", "required", "additionalProperties", "$schema", "$id"})
_SCALARS: dict[str, Any] = {"string": str, "integer": int, "number": (int, float)}


class NotFormable(ValueError):
    """The schema (or one of its properties) is not one the generated form can edit."""


def _plain(node: dict[str, Any], allowed: Iterable[str]) -> None:
    extra = sorted(k for k in node if k not in allowed and k not in _ANNOTATIONS and not k.startswith("x-"))
    if extra:
        raise NotFormable(f"keywords {', '.join(extra)}")


def _is_type(value: Any, kind: str) -> bool:
    return isinstance(value, _SCALARS[kind]) and not isinstance(value, bool)


class DateTimeText(forms.CharField):
    """An RFC 3339 date-time kept as the text typed (with its offset)."""

    def validate(self, value: Any) -> None:
        super().validate(value)
        if value and parse_datetime(value) is None:
            raise ValidationError("Enter a date and time such as 2026-01-31T12:00:00Z.", code="invalid")


def property_field(name: str, prop: Any, *, required: bool) -> forms.Field:
    """The form field for one property; raises NotFormable when it has none."""
    kind = _property_kind(name, prop)
    common: dict[str, Any] = {
        "label": str(prop.get("title") or name),
        "help_text": str(prop.get("description") or ""),
        "required": required,
    }
    default = prop.get("default")
    if kind == "boolean":
        return _checkbox(name, common, default)
    if kind == "array":
        return _checkboxes(name, prop, common, default)
    enum = prop.get("enum")
    if enum is not None:
        if not isinstance(enum, list) or not all(_is_type(v, kind) for v in enum):
            raise NotFormable(f"property {name!r} has an enum of other than {kind}s")
        return EnumField(enum, default=default, **common)
    if kind == "string":
        return _text_field(prop, common, default)
    bounds: dict[str, Any] = {"min_value": prop.get("minimum"), "max_value": prop.get("maximum")}
    if kind == "integer":
        return forms.IntegerField(**common, **bounds, initial=default)
    return forms.FloatField(**common, **bounds, initial=default)


def _property_kind(name: str, prop: Any) -> str:
    """The property's type, once its keywords are known to be ones the form can keep."""
    if not isinstance(prop, dict):
        raise NotFormable(f"property {name!r} is not a schema object")
    kind = prop.get("type")
    if not isinstance(kind, str) or kind not in _BY_TYPE:
        raise NotFormable(f"property {name!r} has type {kind!r}")
    _plain(prop, _BY_TYPE[kind] | {"type"})
    for word in ("minLength", "maxLength", "minItems", "maxItems"):
        if word in prop and not _is_type(prop[word], "integer"):
            raise NotFormable(f"property {name!r} has a {word} that is not an integer")
    for word in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"):
        if word in prop and not _is_type(prop[word], "number"):
            raise NotFormable(f"property {name!r} has a {word} that is not a number")
    return kind


def _checkbox(name: str, common: dict[str, Any], default: Any) -> forms.Field:
    if default is not None and not isinstance(default, bool):
        raise NotFormable(f"property {name!r} has a default that is not a boolean")
    return forms.BooleanField(**{**common, "required": False}, initial=bool(default))


def _checkboxes(name: str, prop: dict[str, Any], common: dict[str, Any], default: Any) -> forms.Field:
    items = prop.get("items")
    if not (isinstance(items, dict) and items.get("type") == "string" and isinstance(items.get("enum"), list)):
        raise NotFormable(f"property {name!r} is an array of other than strings from an enum")
    _plain(items, {"type", "enum"})
    if not all(isinstance(v, str) for v in items["enum"]):
        raise NotFormable(f"property {name!r} has an enum of other than strings")
    initial = default if isinstance(default, list) else None
    return forms.MultipleChoiceField(
        **common,
        choices=[(v, v) for v in items["enum"]],
        widget=forms.CheckboxSelectMultiple,
        initial=initial,
    )


def _text_field(prop: dict[str, Any], common: dict[str, Any], default: Any) -> forms.Field:
    field_format = prop.get("format")
    lengths: dict[str, Any] = {"max_length": prop.get("maxLength"), "min_length": prop.get("minLength")}
    if field_format == "date":
        return forms.DateField(**common, initial=default, widget=forms.DateInput(attrs={"type": "date"}))
    if field_format == "date-time":
        return DateTimeText(**common, **lengths, strip=False, initial=default)
    if field_format == "email":
        return forms.EmailField(**common, **lengths, initial=default)
    widget = forms.TextInput(attrs={"class": "vTextField"})
    return forms.CharField(**common, **lengths, strip=False, initial=default, widget=widget)


class EnumField(forms.TypedChoiceField):
    """One of an enum's values (strings or numbers), a blank choice unless required with a default."""

    def __init__(self, values: list[Any], *, default: Any, **kwargs: Any) -> None:
        self.values = {self.key(v): v for v in values}
        self.listed: list[tuple[str, str]] = [(k, k) for k in self.values]
        if not kwargs["required"] or default is None:
            self.listed.insert(0, ("", "---------"))
        super().__init__(choices=self.listed, coerce=self.value, empty_value=None, **kwargs)
        self.initial = None if default is None else self.key(default)

    def value(self, key: Any) -> Any:
        try:
            return self.values[key]
        except (KeyError, TypeError):
            raise ValueError(key) from None  # Django's "Select a valid choice"

    @staticmethod
    def key(value: Any) -> str:
        return value if isinstance(value, str) else json.dumps(value)

    def keep(self, value: Any) -> None:
        """Offer a current value that is no longer among the choices (a removed task), marked so."""
        key = self.key(value)
        if key not in self.values:
            self.values[key] = value
            self.listed.append((key, f"{key} (not available)"))
            self.choices = self.listed


def _fits(field: forms.Field, value: Any) -> bool:
    """Whether a stored value can be shown in ``field``."""
    if isinstance(field, EnumField):
        return isinstance(value, str | int | float) and not isinstance(value, bool)
    if isinstance(field, forms.MultipleChoiceField):
        return isinstance(value, list) and all(isinstance(v, str) for v in value)
    if isinstance(field, forms.BooleanField):
        return isinstance(value, bool)
    if isinstance(field, forms.IntegerField):
        return _is_type(value, "integer")
    if isinstance(field, forms.FloatField):
        return _is_type(value, "number")
    return isinstance(value, str)


class SchemaFields:
    """The fields of one form-able object schema, named ``<prefix><property>``."""

    def __init__(self, schema: Any, prefix: str) -> None:
        if not isinstance(schema, dict) or schema.get("type") != "object":
            raise NotFormable('the schema is not {"type": "object", ...}')
        _plain(schema, _OBJECT_KEYS)
        if schema_problems(schema, "schema"):  # an invalid one (saved by code): its JSON box says why
            raise NotFormable("the schema is not valid")
        properties = schema.get("properties")
        if not isinstance(properties, dict) or not properties:
            raise NotFormable("the schema has no properties")
        required = schema.get("required", [])
        if not isinstance(required, list) or any(not isinstance(r, str) or r not in properties for r in required):
            raise NotFormable("the schema requires properties it does not describe")
        self.schema = schema
        self.prefix = prefix
        self.fields: dict[str, forms.Field] = {
            prefix + name: property_field(name, prop, required=name in required) for name, prop in properties.items()
        }

    @classmethod
    def build(cls, schema: Any, prefix: str) -> SchemaFields | None:
        """The fields, or None when the schema is not form-able."""
        try:
            return cls(schema, prefix)
        except NotFormable:
            return None

    @property
    def names(self) -> list[str]:
        return list(self.fields)

    def prop(self, field_name: str) -> str:
        return field_name[len(self.prefix) :]

    def initial(self, values: Any) -> dict[str, Any]:
        """Initial data for the fields from an object such as a stored config (what fits)."""
        if not isinstance(values, dict):
            return {}
        initial: dict[str, Any] = {}
        for name, field in self.fields.items():
            if self.prop(name) not in values:
                continue
            value = values[self.prop(name)]
            if not _fits(field, value):
                continue  # a value of another type (the schema changed since): left to the JSON box
            if isinstance(field, EnumField):
                field.keep(value)
                initial[name] = field.key(value)
            elif isinstance(field, forms.DateField) and isinstance(value, str):
                try:
                    initial[name] = datetime.date.fromisoformat(value)
                except ValueError:
                    initial[name] = value
            else:
                initial[name] = value
        return initial

    def omitted(self, form: forms.BaseForm) -> set[str]:
        """Fields whose value the submitted data leaves out (not an unchecked checkbox: absent)."""
        return {
            name
            for name, field in self.fields.items()
            if field.widget.value_omitted_from_data(form.data, form.files, form.add_prefix(name))
        }

    def changed(self, form: forms.BaseForm) -> bool:
        """True when a submitted field differs from its initial value (a field left out of the
        data, as a script may do, is not a change)."""
        omitted = self.omitted(form)
        return any(name in form.changed_data and name not in omitted for name in self.fields)

    def assemble(self, cleaned_data: dict[str, Any]) -> dict[str, Any]:
        """The JSON object of the fields' values; empty optional fields are left out."""
        obj: dict[str, Any] = {}
        for name, field in self.fields.items():
            value = cleaned_data.get(name)
            if isinstance(field, forms.BooleanField):
                obj[self.prop(name)] = bool(value)
                continue
            if value is None or value == "" or value == []:
                continue
            if isinstance(value, datetime.date):
                value = value.isoformat()
            elif isinstance(value, float) and value.is_integer():
                value = int(value)
            obj[self.prop(name)] = value
        return obj

    def check(self, form: forms.BaseForm, value: Any, *, fallback: str | None) -> bool:
        """Validate ``value`` against the schema; each error on its property's field (others on
        ``fallback``). True when it is valid."""
        validator = compile_validator(self.schema)
        ok = True
        for error in sorted(validator.iter_errors(value), key=lambda e: [str(p) for p in e.absolute_path]):
            ok = False
            path = list(error.absolute_path)
            field = self.prefix + str(path[0]) if path else None
            form.add_error(field if field in self.fields else fallback, error.message)
        return ok

    def drop_errors(self, form: forms.BaseForm) -> None:
        """Forget the fields' errors (their values are not used)."""
        for name in self.fields:
            form.errors.pop(name, None)
