"""Tools as rows, the catalog version every cache keys on, and legacy protocol sessions."""

from __future__ import annotations

import re
import secrets
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator
from django.db import connections, models, router, transaction
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from .protocol.shaping import TASK_SUPPORT_VALUES
from .querysets import SessionQuerySet, ToolQuerySet
from .schemas import check_input_schema, check_output_schema

TOOL_NAME_RE = re.compile(r"^[A-Za-z0-9_.\-]{1,128}$")


def default_input_schema() -> dict[str, Any]:
    # T-4: the recommended schema of a tool without parameters.
    return {"type": "object", "additionalProperties": False}


class TaskSupport(models.TextChoices):
    FORBIDDEN = "forbidden", _("Forbidden")
    OPTIONAL = "optional", _("Optional")
    REQUIRED = "required", _("Required")


assert tuple(TaskSupport.values) == TASK_SUPPORT_VALUES


class Tool(models.Model):
    name = models.CharField(
        _("name"),
        max_length=128,
        unique=True,
        validators=[
            RegexValidator(
                TOOL_NAME_RE,
                _("1 to 128 characters of A-Z, a-z, 0-9, underscore, hyphen and dot; no spaces."),
            )
        ],
        help_text=_("What clients call the tool. Case-sensitive and unique (e.g. admin.tools.list)."),
    )
    title = models.CharField(_("title"), max_length=200, blank=True, help_text=_("Display name for people."))
    description = models.TextField(
        _("description"), blank=True, help_text=_("What the tool does and when to use it; models read this.")
    )
    input_schema = models.JSONField(
        _("input schema"),
        default=default_input_schema,
        help_text=_("JSON Schema (2020-12 unless $schema says otherwise) with type object at the root."),
    )
    output_schema = models.JSONField(
        _("output schema"),
        null=True,
        blank=True,
        help_text=_("Optional JSON Schema of structuredContent; results are checked against it."),
    )
    annotation_title = models.CharField(_("annotation title"), max_length=200, blank=True)
    read_only_hint = models.BooleanField(_("read-only hint"), null=True, blank=True)
    destructive_hint = models.BooleanField(_("destructive hint"), null=True, blank=True)
    idempotent_hint = models.BooleanField(_("idempotent hint"), null=True, blank=True)
    open_world_hint = models.BooleanField(_("open-world hint"), null=True, blank=True)
    icons = models.JSONField(
        _("icons"), default=list, blank=True, help_text=_('List of {"src", "mimeType", "sizes", "theme"} objects.')
    )
    task_support = models.CharField(
        _("task support"), max_length=16, choices=TaskSupport.choices, default=TaskSupport.FORBIDDEN
    )
    enabled = models.BooleanField(_("enabled"), default=True, db_index=True)
    handler_key = models.CharField(_("handler"), max_length=200, help_text=_("A handler kind registered in code."))
    handler_config = models.JSONField(
        _("handler config"), default=dict, blank=True, help_text=_("Checked against the handler's config schema.")
    )
    version = models.PositiveIntegerField(_("version"), default=1, editable=False)
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)
    updated_at = models.DateTimeField(_("updated at"), auto_now=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        verbose_name=_("created by"),
        null=True,
        blank=True,
        editable=False,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        verbose_name=_("updated by"),
        null=True,
        blank=True,
        editable=False,
        on_delete=models.SET_NULL,
        related_name="+",
    )

    objects = ToolQuerySet.as_manager()

    class Meta:
        ordering = ("name",)
        verbose_name = _("tool")
        verbose_name_plural = _("tools")

    def __str__(self) -> str:
        return self.name

    def save(self, *args: Any, **kwargs: Any) -> None:
        if self.pk is not None and not kwargs.get("force_insert"):
            self.version = models.F("version") + 1
        with transaction.atomic(using=kwargs.get("using")):
            super().save(*args, **kwargs)
            CatalogVersion.bump()
        if not isinstance(self.version, int):
            self.refresh_from_db(fields=["version"])

    def clean(self) -> None:
        from .registry import registry

        errors: dict[str, list[str]] = {}
        for field, check in (("input_schema", check_input_schema), ("output_schema", check_output_schema)):
            value = getattr(self, field)
            if field == "output_schema" and value is None:
                continue
            try:
                check(value)
            except ValueError as exc:
                errors.setdefault(field, []).append(str(exc))
        if not isinstance(self.icons, list) or not all(
            isinstance(i, dict) and isinstance(i.get("src"), str) for i in self.icons
        ):
            errors.setdefault("icons", []).append("Icons must be a list of objects, each with a string src.")
        kind = registry.get(self.handler_key)
        if kind is None:
            errors.setdefault("handler_key", []).append(f"No handler is registered under {self.handler_key!r}.")
        else:
            for message in kind.config_errors(self.handler_config):
                errors.setdefault("handler_config", []).append(message)
        if errors:
            raise ValidationError(errors)


class CatalogVersion(models.Model):
    """One row whose number changes with every tool change, in the same transaction."""

    id = models.PositiveSmallIntegerField(primary_key=True, default=1, editable=False)
    version = models.BigIntegerField(_("version"), default=1)
    updated_at = models.DateTimeField(_("updated at"), auto_now=True)

    class Meta:
        verbose_name = _("catalog version")

    def __str__(self) -> str:
        return f"catalog v{self.version}"

    @classmethod
    def current(cls) -> int:
        """The current number; read on every request, so one plain SELECT without the ORM."""
        connection = connections[router.db_for_read(cls)]
        table = connection.ops.quote_name(cls._meta.db_table)
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT version FROM {table} WHERE id = 1")  # noqa: S608 - no user input
            row = cursor.fetchone()
        return int(row[0]) if row else 0

    @classmethod
    def bump(cls) -> None:
        updated = cls.objects.filter(pk=1).update(version=models.F("version") + 1, updated_at=timezone.now())
        if not updated:
            _, created = cls.objects.get_or_create(pk=1, defaults={"version": 1})
            if not created:  # another transaction created it meanwhile
                cls.objects.filter(pk=1).update(version=models.F("version") + 1, updated_at=timezone.now())


def new_session_id() -> str:
    # H-14/H-15: cryptographically random, visible ASCII only (URL-safe base64).
    return secrets.token_urlsafe(32)


class McpSession(models.Model):
    """A legacy (initialize-based) protocol session; any worker can serve it."""

    id = models.CharField(primary_key=True, max_length=64, default=new_session_id, editable=False)
    protocol_version = models.CharField(_("protocol version"), max_length=16)
    principal_key = models.CharField(_("principal"), max_length=255, db_index=True)
    client_info = models.JSONField(_("client info"), default=dict, blank=True)
    client_capabilities = models.JSONField(_("client capabilities"), default=dict, blank=True)
    log_level = models.CharField(_("log level"), max_length=16, blank=True)
    initialized = models.BooleanField(_("initialized"), default=False)
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)
    last_seen_at = models.DateTimeField(_("last seen at"), default=timezone.now)
    expires_at = models.DateTimeField(_("expires at"), db_index=True)

    objects = SessionQuerySet.as_manager()

    class Meta:
        verbose_name = _("MCP session")
        verbose_name_plural = _("MCP sessions")

    def __str__(self) -> str:
        return f"{self.id[:8]}… ({self.protocol_version})"

    @staticmethod
    def expiry(idle_seconds: int) -> Any:
        return timezone.now() + timedelta(seconds=idle_seconds)


from .task_models import McpTask as McpTask  # noqa: E402  (tasks live in their own module)
from .task_models import TaskStatus as TaskStatus  # noqa: E402
