"""JSON Schemas (2020-12) of a toolset's tools, derived from its serializer's fields.

Each serializer field gives the schema of the value it writes (``to_representation``) and
reads (``to_internal_value``): the output schemas state types, formats and nullability exactly
as the serializer answers, so every ``structuredContent`` validates against them; the input
schemas add what the serializer checks (choices as ``enum``, lengths, numeric bounds,
patterns, required fields). Constraints the database does not enforce (choices, lengths) are
left out of the output schemas, so a legacy row never fails a page.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from django.db import models
from rest_framework import ISO_8601, relations, serializers

from .serializers import IsoDurationField
from .toolsets import stored

if TYPE_CHECKING:
    from .toolsets import ModelToolset

__all__ = [
    "DECIMAL_FORMAT",
    "model_field_schema",
    "nullable",
    "object_schema",
    "readable_fields",
    "row_schema",
    "value_schema",
]

Schema = dict[str, Any]

TIME_PATTERN = r"^\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?$"
DECIMAL_FORMAT = "decimal"  # an annotation: a base-10 number written as a string


def nullable(schema: Schema) -> Schema:
    """``schema`` that also accepts null."""
    if not schema:
        return schema  # "any" already includes null
    if "enum" in schema and "type" not in schema:
        return schema if None in schema["enum"] else {**schema, "enum": [*schema["enum"], None]}
    kind = schema.get("type")
    out = dict(schema)
    if isinstance(kind, str):
        out["type"] = [kind, "null"]
    elif isinstance(kind, list):
        out["type"] = [*kind, "null"] if "null" not in kind else kind
    else:
        out = {"anyOf": [schema, {"type": "null"}]}
    return out


def model_field_schema(field: models.Field[Any, Any]) -> Schema:
    """The JSON value of a model field as ids and aggregates carry it (no constraints)."""
    if isinstance(field, models.ForeignKey):
        return model_field_schema(field.target_field)
    if isinstance(field, models.GeneratedField):
        return model_field_schema(stored(field))
    for kind, schema in _MODEL_FIELD_SCHEMAS:  # the first class that matches, in this order
        if isinstance(field, kind):
            return dict(schema)
    return {}


# A subclass before its base: DateTimeField is a DateField.
_MODEL_FIELD_SCHEMAS: tuple[tuple[type | tuple[type, ...], Schema], ...] = (
    (models.BooleanField, {"type": "boolean"}),
    ((models.IntegerField, models.AutoField), {"type": "integer"}),
    (models.FloatField, {"type": "number"}),
    (models.DecimalField, {"type": "string", "format": DECIMAL_FORMAT}),
    (models.DateTimeField, {"type": "string", "format": "date-time"}),
    (models.DateField, {"type": "string", "format": "date"}),
    (models.TimeField, {"type": "string", "pattern": TIME_PATTERN}),
    (models.DurationField, {"type": "string", "format": "duration"}),
    (models.UUIDField, {"type": "string", "format": "uuid"}),
    ((models.CharField, models.TextField), {"type": "string"}),
)


def _related_model(field: serializers.Field, model_field: Any) -> Any:
    queryset = getattr(field, "queryset", None)
    if queryset is not None:
        return queryset.model
    if model_field is not None and getattr(model_field, "related_model", None) is not None:
        return model_field.related_model
    return None


def _decimal_pattern(field: serializers.DecimalField, *, exact_places: bool) -> str | None:
    places = field.decimal_places
    digits = field.max_digits
    if places is None:
        return None
    if exact_places:  # what to_representation writes: quantized to ``decimal_places``
        return rf"^-?\d+\.\d{{{places}}}$" if places else r"^-?\d+$"
    whole = "\\d+" if digits is None else f"\\d{{1,{max(digits - places, 1)}}}"
    return rf"^-?{whole}(\.\d{{1,{places}}})?$" if places else rf"^-?{whole}$"


def value_schema(field: serializers.Field, model_field: Any = None, *, constraints: bool) -> Schema:
    """The schema of one non-null value of ``field``; ``constraints`` adds what input checks."""
    for kind, schema_of in _VALUE_SCHEMAS:  # the first class that matches, in this order
        if isinstance(field, kind):
            return schema_of(field, model_field, constraints)
    return {}  # JSONField, ReadOnlyField, SerializerMethodField, custom fields: any JSON value


def _many_related(field: relations.ManyRelatedField, model_field: Any, constraints: bool) -> Schema:
    return {"type": "array", "items": value_schema(field.child_relation, model_field, constraints=constraints)}


def _list(field: Any, model_field: Any, constraints: bool) -> Schema:
    return {"type": "array", "items": value_schema(field.child, None, constraints=constraints)}


def _dict(field: serializers.DictField, model_field: Any, constraints: bool) -> Schema:
    return {"type": "object", "additionalProperties": value_schema(field.child, None, constraints=constraints)}


def _nested(field: serializers.Serializer, model_field: Any, constraints: bool) -> Schema:
    return object_schema(field, output=not constraints)


def _primary_key(field: relations.PrimaryKeyRelatedField, model_field: Any, constraints: bool) -> Schema:
    related = _related_model(field, model_field)
    if field.pk_field is not None:
        return value_schema(field.pk_field, None, constraints=constraints)
    return model_field_schema(related._meta.pk) if related is not None else {}


def _slug(field: relations.SlugRelatedField, model_field: Any, constraints: bool) -> Schema:
    related = _related_model(field, model_field)
    if related is None:
        return {}
    return model_field_schema(related._meta.get_field(field.slug_field))


def _multiple_choice(field: serializers.MultipleChoiceField, model_field: Any, constraints: bool) -> Schema:
    return {"type": "array", "items": _choice_schema(field, constraints=constraints), "uniqueItems": True}


def _choice(field: serializers.ChoiceField, model_field: Any, constraints: bool) -> Schema:
    return _choice_schema(field, constraints=constraints)


def _integer(field: serializers.IntegerField, model_field: Any, constraints: bool) -> Schema:
    if getattr(field, "coerce_to_string", False):  # DRF's BigIntegerField, when asked to
        return {"type": "string", "pattern": r"^-?\d+$"}
    return _bounded({"type": "integer"}, field, constraints)


def _float(field: serializers.FloatField, model_field: Any, constraints: bool) -> Schema:
    return _bounded({"type": "number"}, field, constraints)


def _decimal(field: serializers.DecimalField, model_field: Any, constraints: bool) -> Schema:
    coerce = field.coerce_to_string
    if coerce is None:
        from rest_framework.settings import api_settings

        coerce = api_settings.COERCE_DECIMAL_TO_STRING
    if not coerce and not constraints:
        return {"type": "number"}
    schema: Schema = {"type": "string", "format": DECIMAL_FORMAT}
    pattern = _decimal_pattern(field, exact_places=not constraints)
    if pattern:
        schema["pattern"] = pattern
    return schema


def _time(field: serializers.TimeField, model_field: Any, constraints: bool) -> Schema:
    if _iso(field):
        return {"type": "string", "pattern": TIME_PATTERN}
    return {"type": "string"}


def _uuid(field: serializers.UUIDField, model_field: Any, constraints: bool) -> Schema:
    uuid_format = field.uuid_format
    if uuid_format == "int":
        return {"type": "integer"}
    if uuid_format == "hex":
        return {"type": "string", "pattern": "^[0-9a-f]{32}$"}
    if uuid_format == "urn":
        return {"type": "string", "pattern": "^urn:uuid:"}
    return {"type": "string", "format": "uuid"}


def _model(field: serializers.ModelField, model_field: Any, constraints: bool) -> Schema:
    if isinstance(field.model_field, models.BinaryField):
        return {"type": "string", "contentEncoding": "base64"}
    return model_field_schema(field.model_field)


def _constant(schema: Schema) -> Callable[[Any, Any, bool], Schema]:
    return lambda field, model_field, constraints: dict(schema)


# Each serializer field class and the schema of its values; the first match wins, so a subclass
# comes before its base (SlugRelatedField before RelatedField, IsoDurationField before DurationField).
_VALUE_SCHEMAS: tuple[tuple[type, Callable[[Any, Any, bool], Schema]], ...] = (
    (relations.ManyRelatedField, _many_related),
    (serializers.ListSerializer, _list),
    (serializers.Serializer, _nested),
    (relations.HyperlinkedRelatedField, _constant({"type": "string", "format": "uri"})),
    (relations.PrimaryKeyRelatedField, _primary_key),
    (relations.SlugRelatedField, _slug),
    (relations.StringRelatedField, _constant({"type": "string"})),
    (relations.RelatedField, _constant({})),
    (serializers.MultipleChoiceField, _multiple_choice),
    (serializers.ChoiceField, _choice),
    (serializers.BooleanField, _constant({"type": "boolean"})),
    (serializers.IntegerField, _integer),
    (serializers.FloatField, _float),
    (serializers.DecimalField, _decimal),
    (serializers.DateTimeField, lambda field, model_field, constraints: _formatted(field, "date-time")),
    (serializers.DateField, lambda field, model_field, constraints: _formatted(field, "date")),
    (serializers.TimeField, _time),
    (IsoDurationField, _constant({"type": "string", "format": "duration"})),
    (serializers.DurationField, _constant({"type": "string"})),
    (serializers.UUIDField, _uuid),
    (serializers.FileField, _constant({"type": "string"})),
    (serializers.CharField, lambda field, model_field, constraints: _text(field, constraints, model_field)),
    (serializers.ListField, _list),
    (serializers.DictField, _dict),
    (serializers.ModelField, _model),
)


def _iso(field: serializers.Field) -> bool:
    from rest_framework.settings import api_settings

    fmt = getattr(field, "format", None)
    if fmt is None or fmt is serializers.empty:
        name = {
            serializers.DateTimeField: "DATETIME_FORMAT",
            serializers.DateField: "DATE_FORMAT",
            serializers.TimeField: "TIME_FORMAT",
        }
        for cls, setting in name.items():
            if isinstance(field, cls):
                fmt = getattr(api_settings, setting)
                break
    return isinstance(fmt, str) and fmt.lower() == ISO_8601


def _formatted(field: serializers.Field, fmt: str) -> Schema:
    return {"type": "string", "format": fmt} if _iso(field) else {"type": "string"}


def _bounded(schema: Schema, field: Any, constraints: bool) -> Schema:
    if constraints:
        if field.min_value is not None:
            schema["minimum"] = field.min_value
        if field.max_value is not None:
            schema["maximum"] = field.max_value
    return schema


def _text_format(field: serializers.CharField) -> str | None:
    if isinstance(field, serializers.EmailField):
        return "email"
    if isinstance(field, serializers.URLField):
        return "uri"
    if isinstance(field, serializers.IPAddressField):
        protocol = getattr(field, "protocol", "both")
        return protocol if protocol in ("ipv4", "ipv6") else None
    return None


def _text(field: serializers.CharField, constraints: bool, model_field: Any = None) -> Schema:
    schema: Schema = {"type": "string"}
    fmt = _text_format(field)
    if fmt is not None:
        # A blank value is "", which no format accepts: say so rather than claim the format.
        blank = field.allow_blank or (not constraints and getattr(model_field, "blank", False))
        if blank:
            schema["anyOf"] = [{"format": fmt}, {"const": ""}]
        else:
            schema["format"] = fmt
    if not constraints:
        return schema
    if field.max_length is not None:
        schema["maxLength"] = field.max_length
    if field.min_length is not None:
        schema["minLength"] = field.min_length
    elif not field.allow_blank:
        schema["minLength"] = 1
    if isinstance(field, serializers.SlugField):
        schema["pattern"] = r"^[-\w]+\Z" if field.allow_unicode else r"^[-a-zA-Z0-9_]+$"
    return schema


def _choice_kind(values: list[Any]) -> str:
    if all(isinstance(v, bool) for v in values):
        return "boolean"
    if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return "integer"
    if all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
        return "number"
    return "string"


def _choice_schema(field: serializers.ChoiceField, *, constraints: bool) -> Schema:
    values = list(field.choices)
    if not constraints:
        return {"type": _choice_kind(values)} if values else {}
    enum: list[Any] = [v if isinstance(v, bool | int | float) else str(v) for v in values]
    if field.allow_blank and "" not in enum:
        enum.append("")
    return {"enum": enum}


def _relation_text(field: serializers.Field, model_field: Any) -> str:
    related = None
    if isinstance(field, relations.ManyRelatedField):
        related = _related_model(field.child_relation, model_field)
    elif isinstance(field, relations.RelatedField):
        related = _related_model(field, model_field)
    if related is None:
        return ""
    many = isinstance(field, relations.ManyRelatedField)
    noun = related._meta.verbose_name_plural if many else related._meta.verbose_name
    return f"{'Ids' if many else 'Id'} of {'' if many else 'a '}{noun} ({related._meta.label})."


def _describe(field: serializers.Field, model_field: Any) -> str:
    parts = []
    text = str(field.help_text or field.label or "").strip()
    if text:
        parts.append(text if text.endswith((".", "!", "?")) else f"{text}.")
    related = _relation_text(field, model_field)
    if related:
        parts.append(related)
    if isinstance(field, serializers.ChoiceField) and field.choices:  # (a relation's choices query)
        choices = field.choices
        listed = ", ".join(
            f"{value!r} ({label})" if str(label) != str(value) else repr(value) for value, label in choices.items()
        )
        parts.append(f"One of: {listed}.")
    return " ".join(parts)


def _model_field(field: serializers.Field) -> Any:
    parent = field.parent
    meta = getattr(parent, "Meta", None)
    model = getattr(meta, "model", None)
    if model is None or not field.source or "." in field.source or field.source == "*":
        return None
    try:
        return model._meta.get_field(field.source)
    except Exception:
        return None


def _takes_null(field: serializers.Field, model_field: Any, *, output: bool) -> bool:
    if field.allow_null or (output and isinstance(field, serializers.FileField)):
        return True
    return bool(
        output and model_field is not None and getattr(model_field, "null", False) and not model_field.many_to_many
    )


def field_schema(field: serializers.Field, *, output: bool) -> Schema:
    """The schema of one field in a row (``output``) or in the arguments of a write."""
    model_field = _model_field(field)
    schema = value_schema(field, model_field, constraints=not output)
    if _takes_null(field, model_field, output=output):
        schema = nullable(schema)
    description = _describe(field, model_field)
    if description:
        schema = {**schema, "description": description}
    if output and field.read_only:
        schema["readOnly"] = True
    if not output and field.write_only:
        schema["writeOnly"] = True
    if not output and model_field is not None and _has_constant_default(model_field):
        schema["default"] = _json_default(model_field.default)
    return schema


def _has_constant_default(model_field: Any) -> bool:
    default = getattr(model_field, "default", models.NOT_PROVIDED)
    return default is not models.NOT_PROVIDED and not callable(default) and _json_default(default) is not _NO_JSON


_NO_JSON = object()


def _json_default(value: Any) -> Any:
    import decimal

    if isinstance(value, bool | int | float | str) or value is None:
        return value
    if isinstance(value, decimal.Decimal):
        return str(value)
    return _NO_JSON


def readable_fields(serializer: serializers.Serializer) -> list[serializers.Field]:
    return [f for f in serializer.fields.values() if not f.write_only]


def writable_fields(serializer: serializers.Serializer) -> list[serializers.Field]:
    return [f for f in serializer.fields.values() if not f.read_only and not isinstance(f, serializers.HiddenField)]


def object_schema(serializer: serializers.Serializer, *, output: bool) -> Schema:
    """A row as the serializer writes it (``output``), or the fields a create takes."""
    fields = readable_fields(serializer) if output else writable_fields(serializer)
    properties = {f.field_name: field_schema(f, output=output) for f in fields}
    # Every readable field is always present in a row; a create requires what DRF requires.
    required = list(properties) if output else [f.field_name for f in fields if f.required]
    schema: Schema = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        schema["required"] = required
    return schema


def row_schema(toolset: ModelToolset, serializer: serializers.Serializer) -> Schema:
    schema = object_schema(serializer, output=True)
    schema["title"] = str(toolset.opts.verbose_name).capitalize()
    return schema
