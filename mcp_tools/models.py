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
from .ratelimit import validate_rate
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
    required_scopes = models.ManyToManyField(
        "mcp_tools.Scope",
        verbose_name=_("required scopes"),
        blank=True,
        related_name="tools",
        help_text=_("A token must hold all of them (implied scopes count) to see and call the tool."),
    )
    rate_limit = models.CharField(
        _("rate limit"),
        max_length=32,
        blank=True,
        validators=[validate_rate],
        help_text=_('Calls per principal, e.g. "10/m" or "500/h"; "off" for none; empty: the site default.'),
    )
    sensitive_arguments = models.JSONField(
        _("sensitive arguments"),
        default=list,
        blank=True,
        help_text=_("Argument names whose values the audit trail redacts (also schema properties with writeOnly)."),
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
        if not isinstance(self.sensitive_arguments, list) or not all(
            isinstance(n, str) for n in self.sensitive_arguments
        ):
            errors.setdefault("sensitive_arguments", []).append("A list of argument names (strings).")
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
        from .notify import publish_on_commit

        updated = cls.objects.filter(pk=1).update(version=models.F("version") + 1, updated_at=timezone.now())
        if not updated:
            _, created = cls.objects.get_or_create(pk=1, defaults={"version": 1})
            if not created:  # another transaction created it meanwhile
                cls.objects.filter(pk=1).update(version=models.F("version") + 1, updated_at=timezone.now())
        # After the UPDATE: outside a transaction on_commit runs at once, and listeners must
        # read the new version when they hear of it.
        publish_on_commit(router.db_for_write(cls))


# A process whose stream statistics are older than this is gone.
STATS_STALE_SECONDS = 60


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
    # What the client last heard of the tool list (Catalog.fingerprint): a GET stream opened
    # after a missed list_changed sends it at once.
    tools_fingerprint = models.CharField(_("tools fingerprint"), max_length=32, blank=True)
    # The session's current GET stream (H-9: a notification goes on one stream only).
    get_stream = models.CharField(_("GET stream"), max_length=16, blank=True, editable=False)
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


class StreamStats(models.Model):
    """One row per serving process: its open notification streams and events sent."""

    process = models.CharField(_("process"), max_length=255, primary_key=True, help_text=_("host:pid"))
    notifier = models.CharField(_("notifier"), max_length=32)
    listeners = models.PositiveIntegerField(_("open listeners"), default=0)
    events_sent = models.PositiveBigIntegerField(_("list_changed sent"), default=0)
    heartbeat_at = models.DateTimeField(_("heartbeat"), default=timezone.now, db_index=True)

    class Meta:
        verbose_name = _("stream statistics")
        verbose_name_plural = _("stream statistics")

    def __str__(self) -> str:
        return self.process

    @property
    def is_live(self) -> bool:
        return self.heartbeat_at >= timezone.now() - timedelta(seconds=STATS_STALE_SECONDS)


SCOPE_NAME_RE = re.compile(r"^[\x21\x23-\x5b\x5d-\x7e]{1,100}$")  # RFC 6749 scope-token


class Scope(models.Model):
    """An OAuth scope: what the authorization server grants and tools require."""

    name = models.CharField(
        _("name"),
        max_length=100,
        unique=True,
        validators=[RegexValidator(SCOPE_NAME_RE, _("Visible ASCII without spaces, quotes or backslashes."))],
    )
    description = models.CharField(
        _("description"), max_length=300, blank=True, help_text=_("Shown to people on the consent page.")
    )
    advertised = models.BooleanField(
        _("advertised"),
        default=True,
        help_text=_("Listed in scopes_supported and challenges (progressive mode lists only these)."),
    )
    active = models.BooleanField(_("active"), default=True, help_text=_("Inactive scopes are never granted."))
    implies = models.ManyToManyField(
        "self",
        verbose_name=_("implies"),
        symmetrical=False,
        blank=True,
        related_name="implied_by",
        help_text=_("Holding this scope also grants these (transitively), e.g. notes:write implies notes:read."),
    )
    groups = models.ManyToManyField(
        "auth.Group",
        verbose_name=_("restricted to groups"),
        blank=True,
        related_name="+",
        help_text=_("Empty: any user may be granted it; otherwise only members of these groups."),
    )

    class Meta:
        ordering = ("name",)
        verbose_name = _("scope")
        verbose_name_plural = _("scopes")

    def __str__(self) -> str:
        return self.name

    def save(self, *args: Any, **kwargs: Any) -> None:
        with transaction.atomic(using=kwargs.get("using")):
            super().save(*args, **kwargs)
            CatalogVersion.bump()


class AuditOutcome(models.TextChoices):
    OK = "ok", _("OK")
    TOOL_ERROR = "tool_error", _("Tool error")
    INVALID = "invalid", _("Invalid arguments")
    DENIED = "denied", _("Insufficient scope")
    RATE_LIMITED = "rate_limited", _("Rate limited")
    CANCELLED = "cancelled", _("Cancelled")


class AuditEvent(models.Model):
    """One tools/call: who, which tool and version, what (redacted), how it ended, how long."""

    created_at = models.DateTimeField(_("time"), default=timezone.now, db_index=True)
    principal_key = models.CharField(_("principal"), max_length=255, db_index=True)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        verbose_name=_("user"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        db_constraint=False,
    )
    client_id = models.CharField(_("client"), max_length=255, blank=True, db_index=True)
    tool_name = models.CharField(_("tool"), max_length=128, db_index=True)
    tool_version = models.PositiveIntegerField(_("tool version"), null=True)
    arguments = models.JSONField(_("arguments (summary)"), default=dict, blank=True)
    outcome = models.CharField(_("outcome"), max_length=16, choices=AuditOutcome.choices, db_index=True)
    detail = models.CharField(_("detail"), max_length=300, blank=True)
    duration_ms = models.FloatField(_("duration (ms)"), default=0)
    request_id = models.CharField(_("request id"), max_length=100, blank=True)
    protocol_version = models.CharField(_("protocol version"), max_length=16, blank=True)

    class Meta:
        ordering = ("-created_at",)
        verbose_name = _("audit event")
        verbose_name_plural = _("audit events")

    def __str__(self) -> str:
        return f"{self.tool_name} by {self.principal_key} ({self.outcome})"


from .task_models import McpTask as McpTask  # noqa: E402  (tasks live in their own module)
from .task_models import TaskStatus as TaskStatus  # noqa: E402
