"""What a toolset compiles to, once per process: its serializer (fields built once), the query
plan that keeps a page at a constant number of queries, and the schemas of each operation."""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from django.core.exceptions import FieldDoesNotExist
from django.db import models
from django.db.models import Prefetch
from rest_framework import relations, serializers
from rest_framework.fields import SkipField
from rest_framework.relations import PKOnlyObject

from . import schemas as s
from .actions import AdminAction, action_schemas, resolve_actions
from .serializers import ToolModelSerializer, build_serializer_class
from .site import get_toolset
from .toolsets import ModelToolset, stored

__all__ = ["Compiled", "compiled_for"]


def freeze(cls: type[serializers.Serializer]) -> type[serializers.Serializer]:
    """A subclass whose fields are introspected once: each instance deep-copies them (as DRF
    does with declared fields) instead of reading the model again."""
    template = cls().get_fields()

    def get_fields(self: Any) -> Any:
        return copy.deepcopy(template)

    return type(cls.__name__, (cls,), {"get_fields": get_fields, "__module__": cls.__module__})


@dataclass
class Compiled:
    toolset: ModelToolset
    serializer_class: type[serializers.Serializer]
    select_related: list[str]
    prefetch_related: list[Any]
    fields: dict[str, serializers.Field]  # the readable fields by name (representing values)
    schemas: dict[str, tuple[dict[str, Any], dict[str, Any] | None]] = field(default_factory=dict)
    # Whether every operation's structuredContent matches its output schema by construction
    # (the runner then skips checking it; ToolKind.trusted_output): see ``exact_output``.
    output_exact: bool = False
    # Rows -> what ``serializer_class(rows, many=True).data`` holds, without the serializer's
    # per-row machinery (None with a declared serializer_class): see ``row_writer``.
    write_rows: Callable[[Iterable[Any]], list[dict[str, Any]]] | None = None
    actions: dict[str, AdminAction] = field(default_factory=dict)
    action_schemas: dict[str, tuple[dict[str, Any], dict[str, Any] | None]] = field(default_factory=dict)


# The field classes a generated ToolModelSerializer builds, each of whose outputs the schemas
# state exactly (tests/integration/test_drf_toolsets.py validates every operation's output for
# a model with every standard Django field type).
BUILT_FIELDS: frozenset[type[serializers.Field]] = frozenset(
    {
        *ToolModelSerializer.serializer_field_mapping.values(),
        ToolModelSerializer.serializer_choice_field,
        serializers.MultipleChoiceField,
        serializers.ModelField,
        serializers.ReadOnlyField,
        serializers.FileField,
        serializers.ImageField,
        relations.PrimaryKeyRelatedField,
        relations.ManyRelatedField,
    }
)


def exact_output(toolset: ModelToolset, serializer: serializers.Serializer) -> bool:
    """True when the toolset writes through the generated serializer and every field it reads
    is one of ``BUILT_FIELDS`` (a many-to-many's child too). A declared ``serializer_class`` may
    carry any field or ``to_representation``: its output is checked on every call."""
    if toolset.serializer_class is not None:
        return False
    for f in s.readable_fields(serializer):
        if isinstance(f, relations.ManyRelatedField) and type(f.child_relation) is not relations.PrimaryKeyRelatedField:
            return False
        if type(f) not in BUILT_FIELDS:
            return False
    return True


def _relation(model: Any, name: str) -> Any:
    """The model's relation of that name; None for a column, a property or a method."""
    if not name:
        return None
    try:
        model_field = model._meta.get_field(name)
    except FieldDoesNotExist:
        return None  # a property or method: nothing to join
    return model_field if model_field.is_relation else None


def _plan(serializer: serializers.Serializer) -> tuple[list[str], list[Any]]:
    """select_related / prefetch_related for what the serializer reads, so a page costs the
    same number of queries whatever its size: ids of a foreign key need no join (DRF reads
    ``<fk>_id``), a to-many field is one prefetch query per page, a related object a join."""
    model = serializer.Meta.model
    select: list[str] = []
    prefetch: list[Any] = []
    for f in s.readable_fields(serializer):
        source = f.source
        head = source.split(".")[0] if source else ""
        model_field = _relation(model, head) if source != "*" else None
        if model_field is None:
            continue
        many = model_field.many_to_many or model_field.one_to_many
        if isinstance(f, relations.ManyRelatedField) and isinstance(f.child_relation, relations.PrimaryKeyRelatedField):
            related = model_field.related_model
            prefetch.append(Prefetch(head, queryset=related._default_manager.only("pk")))
        elif many:
            prefetch.append(head)
        elif isinstance(f, relations.PrimaryKeyRelatedField) and "." not in source:
            continue  # the id is on the row
        else:
            select.append(head)
    return sorted(set(select)), prefetch


Writer = Callable[[Any], Any]


def _generic(f: serializers.Field) -> Writer:
    """Exactly what ``Serializer.to_representation`` does for one field."""

    def write(instance: Any) -> Any:
        attribute = f.get_attribute(instance)
        check = attribute.pk if isinstance(attribute, PKOnlyObject) else attribute
        return None if check is None else f.to_representation(attribute)

    return write


def _field_writer(model: type[models.Model], f: serializers.Field) -> Writer:
    """One field's value of a row: a shortcut for a plain column, a foreign key's id and a
    prefetched many-to-many's ids (what DRF reads and writes for them), DRF's path otherwise."""
    source = f.source
    model_field = _column(model, source)
    if not isinstance(model_field, models.Field) or f.default is not serializers.empty:
        return _generic(f)  # a property, a method, a reverse relation, a default: DRF's reading
    kind = type(f)
    if kind is relations.PrimaryKeyRelatedField and model_field.many_to_one and f.use_pk_only_optimization():
        return _id_writer(model_field.attname, f.pk_field)
    if kind is relations.ManyRelatedField and _prefetched_ids(model_field, f):
        return _ids_writer(source, _generic(f))
    if _plain_value(kind, model_field):
        return _value_writer(source, f.to_representation)
    return _generic(f)


def _plain_value(kind: type, model_field: models.Field[Any, Any]) -> bool:
    """Whether a built-in field over a concrete column writes its value as the column holds it."""
    return kind in BUILT_FIELDS and model_field.concrete and not model_field.is_relation and kind not in _SPECIAL


def _column(model: type[models.Model], source: str) -> Any:
    """The model's field a serializer field's source names, if it is a plain name."""
    try:
        return model._meta.get_field(source) if source and "." not in source and source != "*" else None
    except FieldDoesNotExist:
        return None


def _prefetched_ids(model_field: models.Field[Any, Any], f: Any) -> bool:
    """Whether a many-related field's ids can be read from the prefetched rows."""
    return bool(
        model_field.many_to_many
        and not model_field.auto_created
        and type(f.child_relation) is relations.PrimaryKeyRelatedField
        and f.child_relation.pk_field is None
    )


def _id_writer(attname: str, pk_field: Any) -> Writer:
    def write_id(instance: Any) -> Any:
        value = getattr(instance, attname)
        return None if value is None else value if pk_field is None else pk_field.to_representation(value)

    return write_id


def _ids_writer(source: str, fallback: Writer) -> Writer:
    def write_ids(instance: Any) -> Any:
        cached = getattr(instance, "_prefetched_objects_cache", {}).get(source)
        if cached is None or instance.pk is None:
            return fallback(instance)
        return [related.pk for related in cached]

    return write_ids


def _value_writer(source: str, represent: Writer) -> Writer:
    def write_value(instance: Any) -> Any:
        value = getattr(instance, source)
        return None if value is None else represent(value)

    return write_value


# Fields whose value is not the column's attribute (files: a URL; ModelField, ReadOnlyField:
# their own reading).
_SPECIAL = frozenset({serializers.FileField, serializers.ImageField, serializers.ModelField, serializers.ReadOnlyField})


def row_writer(toolset: ModelToolset, serializer: serializers.Serializer) -> Callable[[Iterable[Any]], list[Any]]:
    """Rows -> the serializer's ``data`` for them, one writer per field built once per toolset
    version (tests compare it with the serializer's output for every field type)."""
    writers = [(f.field_name, _field_writer(toolset.model, f)) for f in s.readable_fields(serializer)]

    def write(rows: Iterable[Any]) -> list[dict[str, Any]]:
        out = []
        for row in rows:
            item: dict[str, Any] = {}
            for name, writer in writers:
                try:
                    item[name] = writer(row)
                except SkipField:
                    continue
            out.append(item)
        return out

    return write


def compile_toolset(toolset: ModelToolset) -> Compiled:
    cls = freeze(build_serializer_class(toolset))
    serializer = cls()
    select, prefetch = _plan(serializer)
    compiled = Compiled(
        toolset=toolset,
        serializer_class=cls,
        select_related=select,
        prefetch_related=prefetch,
        fields={f.field_name: f for f in s.readable_fields(serializer)},
        output_exact=exact_output(toolset, serializer),
    )
    if toolset.serializer_class is None:
        compiled.write_rows = row_writer(toolset, serializer)
    for operation in toolset.operations:
        compiled.schemas[operation] = _operation_schemas(toolset, serializer, operation)
    compiled.actions = resolve_actions(toolset)
    for name in compiled.actions:
        compiled.action_schemas[name] = action_schemas(toolset)
    return compiled


_compiled: dict[str, Compiled] = {}
_lock = threading.Lock()


def compiled_for(key: Any, revision: Any = None) -> Compiled:
    """The compiled toolset registered as ``key`` (ValueError when there is none)."""
    toolset = get_toolset(key, revision)
    found = _compiled.get(toolset.key)
    if found is None or found.toolset is not toolset:
        with _lock:
            found = _compiled.get(toolset.key)
            if found is None or found.toolset is not toolset:
                found = _compiled[toolset.key] = compile_toolset(toolset)
    return found


# --------------------------------------------------------------------------- schemas per operation


def _lookup_schema(toolset: ModelToolset, serializer: serializers.Serializer) -> dict[str, Any]:
    name = toolset.lookup_argument
    f = serializer.fields.get(name)
    if f is not None and not f.write_only:
        schema = s.value_schema(f, toolset.lookup, constraints=False)
    else:
        schema = s.model_field_schema(toolset.lookup)
    return {**schema, "description": f"The {name} of the {toolset.opts.verbose_name}."}


def _filter_schema(toolset: ModelToolset, serializer: serializers.Serializer) -> dict[str, Any]:
    properties: dict[str, Any] = {}
    for name, operators in toolset.filters.items():
        f = serializer.fields[name]
        model_field = toolset.model_field(name)
        if isinstance(f, relations.ManyRelatedField):
            f = f.child_relation
        value = s.value_schema(f, model_field, constraints=True)
        value.pop("minLength", None)
        ops: dict[str, Any] = {}
        for op in operators:
            if op in ("exact", "lt", "lte", "gt", "gte"):
                ops[op] = value
            elif op == "in":
                ops[op] = {"type": "array", "items": value, "minItems": 1, "maxItems": toolset.max_in}
            elif op == "range":
                ops[op] = {"type": "array", "prefixItems": [value, value], "items": False, "minItems": 2}
            elif op == "isnull":
                ops[op] = {"type": "boolean"}
            else:
                ops[op] = {"type": "string", "minLength": 1, "maxLength": toolset.max_search_length}
        properties[name] = {
            "type": "object",
            "properties": ops,
            "propertyNames": {"enum": list(operators)},
            "minProperties": 1,
        }
    return {
        "type": "object",
        "description": (
            "Conditions, all of which must hold: {field: {operator: value}}, e.g. "
            '{"price": {"gte": "10", "lt": "20"}}. '
            f"At most {toolset.max_filters} conditions; 'in' takes at most {toolset.max_in} values."
        ),
        "properties": properties,
        "propertyNames": {"enum": list(properties)},
        "maxProperties": toolset.max_filters,
    }


def _search_schema(toolset: ModelToolset) -> dict[str, Any]:
    return {
        "type": "string",
        "maxLength": toolset.max_search_length,
        "description": f"Words that must all appear (any case) in one of: {', '.join(toolset.search_paths)}.",
    }


def _query_properties(toolset: ModelToolset, serializer: serializers.Serializer) -> dict[str, Any]:
    properties: dict[str, Any] = {}
    if toolset.filters:
        properties["filter"] = _filter_schema(toolset, serializer)
    if toolset.search_paths:
        properties["search"] = _search_schema(toolset)
    return properties


def _aggregate_value(toolset: ModelToolset, fields: dict[str, serializers.Field], function: str, name: str) -> Any:
    model_field = stored(toolset.model_field(name))
    if function in ("min", "max"):
        return s.nullable(s.value_schema(fields[name], model_field, constraints=False))
    if isinstance(model_field, models.DecimalField):
        return s.nullable({"type": "string", "format": s.DECIMAL_FORMAT})
    if function == "sum" and isinstance(model_field, models.IntegerField | models.AutoField):
        return {"type": ["integer", "null"]}
    return {"type": ["number", "null"]}


def _operation_schemas(
    toolset: ModelToolset,
    serializer: serializers.Serializer,
    operation: str,
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    row = s.row_schema(toolset, serializer)
    lookup = toolset.lookup_argument
    lookup_schema = _lookup_schema(toolset, serializer)
    plural = str(toolset.opts.verbose_name_plural)
    if operation == "list":
        return _list_schemas(toolset, serializer, row, plural)
    if operation in ("get", "delete"):
        return _lookup_schemas(operation, row, lookup, lookup_schema)
    if operation == "create":
        return s.object_schema(serializer, output=False), row
    if operation == "update":
        data = s.object_schema(serializer, output=False)
        data.pop("required", None)
        data["minProperties"] = 1
        data["description"] = "The fields to change; the others keep their values."
        input_schema = {
            "type": "object",
            "properties": {lookup: lookup_schema, "data": data},
            "required": [lookup, "data"],
            "additionalProperties": False,
        }
        return input_schema, row
    assert operation == "aggregate"
    return _aggregate_schemas(toolset, serializer)


_Schemas = tuple[dict[str, Any], dict[str, Any] | None]


def _list_schemas(
    toolset: ModelToolset, serializer: serializers.Serializer, row: dict[str, Any], plural: str
) -> _Schemas:
    properties = _query_properties(toolset, serializer)
    if toolset.orderings:
        names = [n for name in toolset.orderings for n in (name, f"-{name}")]
        default = list(toolset.ordering) or ["pk"]
        properties["order_by"] = {
            "type": "array",
            "items": {"enum": names},
            "maxItems": toolset.max_ordering,
            "uniqueItems": True,
            "description": f"Sort keys, '-' for descending (default: {', '.join(default)}); ties by id.",
        }
    properties["limit"] = {
        "type": "integer",
        "minimum": 1,
        "maximum": toolset.max_page_size,
        "default": toolset.page_size,
        "description": "Rows per page.",
    }
    properties["cursor"] = {
        "type": "string",
        "maxLength": 4096,
        "description": "next_cursor of the previous page, with the same filter, search and order_by.",
    }
    properties["include_total"] = {
        "type": "boolean",
        "default": False,
        "description": "Also count every matching row (one more query).",
    }
    input_schema = {"type": "object", "properties": properties, "additionalProperties": False}
    output = {
        "type": "object",
        "properties": {
            "items": {"type": "array", "items": row},
            "next_cursor": {
                "type": ["string", "null"],
                "description": "Pass it as cursor for the next page; null on the last page.",
            },
            "total": {"type": "integer", "minimum": 0, "description": f"Matching {plural} (include_total)."},
        },
        "required": ["items", "next_cursor"],
        "additionalProperties": False,
    }
    return input_schema, output


def _lookup_schemas(operation: str, row: dict[str, Any], lookup: str, lookup_schema: dict[str, Any]) -> _Schemas:
    """get and delete: the row named by its lookup argument."""
    input_schema = {
        "type": "object",
        "properties": {lookup: lookup_schema},
        "required": [lookup],
        "additionalProperties": False,
    }
    if operation == "get":
        return input_schema, row
    output = {
        "type": "object",
        "properties": {"deleted": {"const": True}, lookup: lookup_schema},
        "required": ["deleted", lookup],
        "additionalProperties": False,
    }
    return input_schema, output


def _group_schema(toolset: ModelToolset, fields: dict[str, Any]) -> dict[str, Any]:
    """The values of the group_by fields: one schema, or any of theirs."""
    group_values = [
        s.value_schema(fields[name], toolset.model_field(name), constraints=False) for name in toolset.groups
    ]
    unique = [v for i, v in enumerate(group_values) if v not in group_values[:i]]
    return s.nullable(unique[0] if len(unique) == 1 else {"anyOf": unique})


def _aggregate_schemas(toolset: ModelToolset, serializer: serializers.Serializer) -> _Schemas:
    properties = _query_properties(toolset, serializer)
    fields = {f.field_name: f for f in s.readable_fields(serializer)}
    group_item: dict[str, Any] = {"count": {"type": "integer", "minimum": 0}}
    for function in ("sum", "avg", "min", "max"):
        names = [name for name, functions in toolset.aggregates.items() if function in functions]
        if not names:
            continue
        properties[function] = {
            "type": "array",
            "items": {"enum": names},
            "uniqueItems": True,
            "description": f"Fields whose {function} to compute.",
        }
        for name in names:
            group_item[f"{function}_{name}"] = _aggregate_value(toolset, fields, function, name)
    if toolset.groups:
        properties["group_by"] = {"enum": list(toolset.groups), "description": "One row per value of this field."}
        group_item["group"] = _group_schema(toolset, fields)
    input_schema = {"type": "object", "properties": properties, "additionalProperties": False}
    output = {
        "type": "object",
        "properties": {
            "group_by": {"type": ["string", "null"]},
            "groups": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": group_item,
                    "required": ["count"],
                    "additionalProperties": False,
                },
            },
            "truncated": {
                "type": "boolean",
                "description": f"More than {toolset.max_groups} groups: the rest are left out.",
            },
        },
        "required": ["group_by", "groups", "truncated"],
        "additionalProperties": False,
    }
    return input_schema, output
