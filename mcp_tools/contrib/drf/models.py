"""Toolsets defined in the admin, with no code: a row says what a ``ModelToolset`` class says.

Saving one checks it like a registered class, then writes its tool rows in the same transaction
(so list_changed fires once it commits); its ``revision`` goes into those rows' config, so every
process rebuilds the toolset from this row when it changes (``site.get_toolset``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.contrib.contenttypes.models import ContentType
from django.core.exceptions import FieldDoesNotExist, ImproperlyConfigured, ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models, transaction
from django.utils.translation import gettext_lazy as _

from ...types import Principal
from .actions import resolve_actions
from .serializers import check_serializer
from .toolsets import CONFIRM_MODES, OPERATIONS, ModelToolset

__all__ = ["ToolsetDefinition"]

ADMIN_PREFIX = "admin."  # the keys of toolsets defined here (site.ADMIN_PREFIX)


def default_operations() -> list[str]:
    return ["list", "get"]


class ToolsetDefinition(models.Model):
    name = models.SlugField(
        _("name"),
        max_length=60,
        unique=True,
        help_text=_("Names the tools: list_NAME, get_NAME, ... (letters, digits, _ and -)."),
    )
    model = models.ForeignKey(
        ContentType, verbose_name=_("model"), on_delete=models.CASCADE, related_name="+", help_text=_("The model.")
    )
    fields = models.JSONField(
        _("fields"), default=list, help_text=_('The fields the tools read and write: a list of names, or "__all__".')
    )
    read_only_fields = models.JSONField(_("read-only fields"), default=list, blank=True)
    operations = models.JSONField(
        _("operations"), default=default_operations, help_text=_(f"Any of: {', '.join(OPERATIONS)}.")
    )
    lookup_field = models.CharField(_("lookup field"), max_length=100, default="pk")
    filter_fields = models.JSONField(
        _("filter fields"),
        default=dict,
        blank=True,
        help_text=_('{"field": ["exact", "gte", ...]} or a list of names.'),
    )
    search_fields = models.JSONField(_("search fields"), default=list, blank=True)
    ordering_fields = models.JSONField(_("ordering fields"), default=list, blank=True)
    ordering = models.JSONField(_("default ordering"), default=list, blank=True)
    aggregate_fields = models.JSONField(_("aggregate fields"), default=list, blank=True)
    group_by_fields = models.JSONField(_("group-by fields"), default=list, blank=True)
    owner_field = models.CharField(
        _("owner field"),
        max_length=100,
        blank=True,
        help_text=_("A foreign key to the user: each caller reaches only its own rows, and owns what it creates."),
    )
    page_size = models.PositiveIntegerField(_("page size"), default=50, validators=[MinValueValidator(1)])
    max_page_size = models.PositiveIntegerField(
        _("largest page"), default=200, validators=[MinValueValidator(1), MaxValueValidator(1000)]
    )
    required_scopes = models.JSONField(
        _("required scopes"), default=list, blank=True, help_text=_('A list for every operation, or {"create": [...]}.')
    )
    actions = models.JSONField(
        _("admin actions"),
        default=list,
        blank=True,
        help_text=_("Names of the model's ModelAdmin actions to serve as tools ACTION_NAME over a list of ids."),
    )
    destructive_actions = models.JSONField(
        _("destructive actions"),
        default=list,
        blank=True,
        help_text=_("Those of the actions that destroy data: marked destructive and confirmed as set below."),
    )
    confirm_destructive = models.CharField(
        _("confirm destructive operations"),
        max_length=10,
        choices=[(mode, mode) for mode in CONFIRM_MODES],
        default="ask",
        help_text=_(
            "Delete (and destructive actions): ask the user first through elicitation when the client can "
            "(ask), always, refusing clients that cannot (require), or never."
        ),
    )
    enabled = models.BooleanField(_("enabled"), default=True)
    revision = models.PositiveIntegerField(_("revision"), default=0, editable=False)
    updated_at = models.DateTimeField(_("updated at"), auto_now=True)

    class Meta:
        ordering = ("name",)
        verbose_name = _("model toolset")
        verbose_name_plural = _("model toolsets")

    def __str__(self) -> str:
        return self.name

    def save(self, *args: Any, **kwargs: Any) -> None:
        self.revision = (self.revision or 0) + 1
        with transaction.atomic(using=kwargs.get("using")):
            super().save(*args, **kwargs)  # the rows are written by a post_save receiver (receivers)

    @property
    def key(self) -> str:
        return ADMIN_PREFIX + self.name

    def as_toolset(self) -> ModelToolset:
        """The toolset this row declares, checked like a registered class (ImproperlyConfigured)."""
        model = self.model.model_class() if self.model_id else None
        if model is None:
            raise ImproperlyConfigured("The model does not exist (any more).")
        attrs = self._class_attrs(model)
        _check_attrs(attrs)
        if self.owner_field:
            attrs.update(_owner_rules(model, self.owner_field))
            if isinstance(self.fields, list) and self.owner_field in self.fields:
                attrs["read_only_fields"] = [*attrs["read_only_fields"], self.owner_field]  # never handed over
        cls = type(f"AdminToolset_{self.name.replace('-', '_')}", (ModelToolset,), attrs)
        toolset: ModelToolset = cls()
        toolset.check()
        check_serializer(toolset)
        try:
            resolve_actions(toolset)
        except ValueError as exc:
            raise ImproperlyConfigured(str(exc).split(": ", 1)[-1]) from exc
        return toolset

    def _class_attrs(self, model: type[models.Model]) -> dict[str, Any]:
        """The attributes of the ModelToolset class this row declares."""
        return {
            "__module__": __name__,
            "__doc__": f"Defined in the admin ({self.name}, revision {self.revision}).",
            "model": model,
            "fields": self.fields,
            **{name: list(getattr(self, name) or ()) for name in _LISTED},
            "lookup_field": self.lookup_field or "pk",
            "filter_fields": self.filter_fields or (),
            "page_size": self.page_size,
            "max_page_size": self.max_page_size,
            "required_scopes": self.required_scopes or (),
            "confirm_destructive": self.confirm_destructive,
            "actions": self.actions or [],
            "destructive_actions": self.destructive_actions or [],
            "name": self.name,
            "key": self.key,
            "revision": self.revision,
        }

    def clean(self) -> None:
        try:
            self.as_toolset()
        except (ImproperlyConfigured, FieldDoesNotExist, TypeError, ValueError) as exc:
            message = str(exc).split("): ", 1)[-1]  # without the generated class's name
            raise ValidationError(message) from exc


# The row's lists of names, each handed to the class as a list.
_LISTED = (
    "read_only_fields",
    "operations",
    "search_fields",
    "ordering_fields",
    "ordering",
    "aggregate_fields",
    "group_by_fields",
)
_NAME_LISTS = (
    "fields",
    "read_only_fields",
    "operations",
    "search_fields",
    "ordering_fields",
    "ordering",
    "actions",
    "destructive_actions",
)


def _check_attrs(attrs: dict[str, Any]) -> None:
    """The JSON columns hold what the class expects (a list of names, a mapping...)."""
    for attr in _NAME_LISTS:
        value = attrs[attr]
        if not (value == "__all__" and attr == "fields") and not (
            isinstance(value, list) and all(isinstance(v, str) for v in value)
        ):
            raise ImproperlyConfigured(f"{attr} must be a list of names")
    if not isinstance(attrs["filter_fields"], Mapping | list | tuple):
        raise ImproperlyConfigured('filter_fields must be {"field": [operators]} or a list of names')
    if not isinstance(attrs["required_scopes"], Mapping | list | tuple):
        raise ImproperlyConfigured("required_scopes must be a list of scope names or {operation: [names]}")


def _owner_rules(model: type[models.Model], name: str) -> dict[str, Any]:
    field = model._meta.get_field(name)
    if not (field.many_to_one and field.related_model is not None):
        raise ImproperlyConfigured(f"owner_field {name!r} is not a foreign key")
    user_model: Any = field.related_model
    if f"{user_model._meta.app_label}.{user_model._meta.object_name}" != settings.AUTH_USER_MODEL:
        raise ImproperlyConfigured(f"owner_field {name!r} does not point to {settings.AUTH_USER_MODEL}")

    def get_queryset(self: ModelToolset, principal: Principal) -> models.QuerySet[Any]:
        rows = self.model._default_manager.all()
        return rows.filter(**{name: principal.user}) if principal.user is not None else rows.none()

    def perform_create(self: ModelToolset, serializer: Any, principal: Principal) -> models.Model:
        return serializer.save(**{name: principal.user})  # type: ignore[no-any-return]

    return {"get_queryset": get_queryset, "perform_create": perform_create}
