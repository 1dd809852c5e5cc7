"""The serializer a toolset reads and writes through: a ModelSerializer with fixed wire forms.

``ToolModelSerializer`` answers the same JSON whatever the site's ``REST_FRAMEWORK`` settings
(decimals as strings, ISO 8601 dates, times and durations, integers as numbers), keeps file,
binary and generated fields read-only (JSON cannot upload a file), and runs the model's own
validation (``full_clean``: field validators, ``clean()``, unique and check constraints) before
every save, which DRF alone does not.
"""

from __future__ import annotations

import copy
from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import models
from django.utils.duration import duration_iso_string
from rest_framework import ISO_8601, serializers
from rest_framework.exceptions import ErrorDetail
from rest_framework.settings import api_settings
from rest_framework.utils import model_meta

from .toolsets import ModelToolset, is_secret_name

__all__ = [
    "IsoDurationField",
    "ToolModelSerializer",
    "build_serializer_class",
    "check_serializer",
]


class IsoDurationField(serializers.DurationField):  # type: ignore[misc]
    """Durations as ISO 8601 (``P1DT02H00M00S``), the form JSON Schema's ``duration`` names."""

    def to_representation(self, value: Any) -> str:
        return duration_iso_string(value)


# Arguments a read-only field keeps (the rest describe input).
_READ_ONLY_KWARGS = (
    "label",
    "help_text",
    "max_digits",
    "decimal_places",
    "model_field",
    "allow_null",
    "choices",
    "coerce_to_string",
    "format",
)


class ToolModelSerializer(serializers.ModelSerializer):  # type: ignore[misc]
    """A ModelSerializer for tools: fixed wire forms, model validation on create and update."""

    serializer_field_mapping = {
        **serializers.ModelSerializer.serializer_field_mapping,
        models.BigAutoField: serializers.IntegerField,
        models.BigIntegerField: serializers.IntegerField,
        models.PositiveBigIntegerField: serializers.IntegerField,
        models.DurationField: IsoDurationField,
        # DRF's FilePathField lists the directory when the serializer is built: a plain string.
        models.FilePathField: serializers.CharField,
    }

    def build_standard_field(self, field_name: str, model_field: Any) -> tuple[type[serializers.Field], dict[str, Any]]:
        generated = isinstance(model_field, models.GeneratedField)
        source = model_field
        if generated:  # described by its output field, bound like the generated one
            source = copy.copy(model_field.output_field)
            source.set_attributes_from_name(model_field.name)
            source.model = model_field.model
        field_class, kwargs = super().build_standard_field(field_name, source)
        if isinstance(source, models.FilePathField):
            for name in ("path", "match", "recursive", "allow_files", "allow_folders"):
                kwargs.pop(name, None)
        if generated:
            kwargs["allow_null"] = True  # computed by the database; NULL when an input is NULL
        if issubclass(field_class, serializers.DecimalField):
            kwargs["coerce_to_string"] = True
        elif issubclass(field_class, serializers.DateTimeField | serializers.DateField | serializers.TimeField):
            kwargs["format"] = ISO_8601
        if issubclass(field_class, serializers.FileField):
            field_class = serializers.FileField  # an ImageField needs Pillow only to read input
            kwargs.update(read_only=True, allow_null=True, use_url=True)
        if generated or issubclass(field_class, serializers.FileField) or field_class is serializers.ModelField:
            keep = {k: v for k, v in kwargs.items() if k in (*_READ_ONLY_KWARGS, "use_url")}
            if field_class is not serializers.ModelField:
                keep.pop("model_field", None)
            kwargs = {**keep, "read_only": True}
        return field_class, kwargs

    def create(self, validated_data: dict[str, Any]) -> models.Model:
        model = self.Meta.model
        many = _pop_many(model, validated_data)
        instance = model(**validated_data)
        _full_clean(instance)
        instance.save()
        for name, value in many.items():
            getattr(instance, name).set(value)
        return instance  # type: ignore[no-any-return]

    def update(self, instance: models.Model, validated_data: dict[str, Any]) -> models.Model:
        many = _pop_many(type(instance), validated_data)
        for name, value in validated_data.items():
            setattr(instance, name, value)
        _full_clean(instance)
        instance.save()
        for name, value in many.items():
            getattr(instance, name).set(value)
        return instance


def _pop_many(model: type[models.Model], data: dict[str, Any]) -> dict[str, Any]:
    info = model_meta.get_field_info(model)
    return {name: data.pop(name) for name in list(data) if name in info.relations and info.relations[name].to_many}


def _full_clean(instance: models.Model) -> None:
    """The model's validation, as DRF field errors (``__all__`` as ``non_field_errors``)."""
    try:
        instance.full_clean()
    except DjangoValidationError as exc:
        if not hasattr(exc, "error_dict"):
            raise serializers.ValidationError({api_settings.NON_FIELD_ERRORS_KEY: exc.messages}) from exc
        # Each message keeps its code ("unique", ...): the handler reads it (uniqueness errors).
        detail = {
            (api_settings.NON_FIELD_ERRORS_KEY if key == "__all__" else key): [
                ErrorDetail(message, code=error.code) for error in errors for message in error.messages
            ]
            for key, errors in exc.error_dict.items()
        }
        raise serializers.ValidationError(detail) from exc


def build_serializer_class(toolset: ModelToolset) -> type[serializers.Serializer]:
    """The toolset's serializer: its ``serializer_class``, or a ``ToolModelSerializer`` built from
    ``fields``/``exclude``/``read_only_fields``. Names that look like secrets are left out
    unless ``fields`` lists them."""
    if toolset.serializer_class is not None:
        return toolset.serializer_class
    opts = toolset.opts
    if isinstance(toolset.fields, list | tuple):
        names = list(toolset.fields)
    else:
        names = [
            f.name
            for f in opts.get_fields()
            if isinstance(f, models.Field)
            and (f.concrete or f.many_to_many)
            and f.name not in toolset.exclude
            and not is_secret_name(f.name)
        ]
    meta = type(
        "Meta",
        (),
        {"model": toolset.model, "fields": names, "read_only_fields": list(toolset.read_only_fields)},
    )
    return type(f"{toolset.model.__name__}ToolSerializer", (ToolModelSerializer,), {"Meta": meta})


def check_serializer(toolset: ModelToolset) -> None:
    """Build the serializer once at registration so a wrong field name fails at startup, and
    check that callers filter, order, aggregate and group only on fields they can read."""
    from django.core.exceptions import ImproperlyConfigured

    cls = build_serializer_class(toolset)
    if not (isinstance(cls, type) and issubclass(cls, serializers.ModelSerializer)):
        raise ImproperlyConfigured(f"{type(toolset).__name__}: serializer_class must be a ModelSerializer")
    if cls.Meta.model is not toolset.model:
        raise ImproperlyConfigured(f"{type(toolset).__name__}: serializer_class serializes another model")
    try:
        fields = cls().fields
    except (ImproperlyConfigured, AssertionError, TypeError, ValueError) as exc:
        raise ImproperlyConfigured(f"{type(toolset).__name__}: its serializer cannot be built: {exc}") from exc
    readable = {f.source for f in fields.values() if not f.write_only}
    for setting, names in (
        ("filter_fields", toolset.filters),
        ("ordering_fields", toolset.orderings),
        ("aggregate_fields", toolset.aggregates),
        ("group_by_fields", toolset.groups),
    ):
        hidden = [name for name in names if name not in readable]
        if hidden:
            raise ImproperlyConfigured(
                f"{type(toolset).__name__}: {setting} {hidden} are not fields the serializer returns; "
                "callers may only filter, order and group on what they can read"
            )
