"""Tools as rows, the OAuth scopes they require, and the catalog version every cache keys on."""

from __future__ import annotations

import contextlib
import re
import threading
from collections.abc import Collection, Iterable, Iterator
from contextvars import ContextVar
from typing import Any

import orjson
from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator, RegexValidator
from django.db import connections, models, router, transaction
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from ..protocol.apps import PERMISSIONS, domain_problem, origin_problem
from ..protocol.jsonrpc import depth_over
from ..protocol.shaping import TASK_SUPPORT_VALUES
from ..ratelimit import validate_rate
from ..registry import registry
from ..schemas import input_schema_problems, output_schema_problems
from ..signals import catalog_changed
from ..ui import template_problems
from . import walmark
from .querysets import ToolQuerySet
from .raw import fetch_one
from .revisions import RevisionAction, revision

__all__ = [
    "ACCESS_FIELDS",
    "ANNOTATION_FIELDS",
    "APPROVAL_FIELDS",
    "BINDING_FIELDS",
    "CatalogVersion",
    "DISCOVERY_FIELDS",
    "EDITABLE_FIELDS",
    "MAX_JSON_DEPTH",
    "SCOPE_NAME_RE",
    "Scope",
    "TOOL_NAME_RE",
    "TaskSupport",
    "Tool",
    "UI_CSP_FIELDS",
    "UI_FIELDS",
    "UiPermission",
    "UiVisibility",
    "WIRE_FIELDS",
    "default_input_schema",
]

TOOL_NAME_RE = re.compile(r"^[A-Za-z0-9_.\-]{1,128}$")
# An escaped NUL in JSON text: \u0000 after an even number of backslashes (not a written "\\u0000").
_JSON_NUL = re.compile(rb"(?<!\\)(?:\\\\)*\\u0000")

# Bounds on what one tool may hold, checked by Tool.full_clean() (the admin form, mcp_import and
# every API that cleans a row): a tools/list page and the catalog stay small whatever is typed.
MAX_DESCRIPTION_CHARS = 8192
MAX_JSON_DEPTH = 32
MAX_JSON_BYTES: dict[str, int] = {
    "input_schema": 65_536,
    "output_schema": 65_536,
    "icons": 32_768,
    "handler_config": 65_536,
    "sensitive_arguments": 8_192,
    "ui_connect_domains": 8_192,
    "ui_resource_domains": 8_192,
    "ui_frame_domains": 8_192,
    "ui_base_uri_domains": 8_192,
    "ui_permissions": 1_024,
    "ui_tools": 8_192,
    "tags": 2_048,
}
MAX_UI_TEMPLATE_CHARS = 262_144
MAX_UI_ORIGINS = 32
MAX_UI_TOOLS = 32
MAX_ICONS = 8
TEXT_FIELDS = (
    "name",
    "title",
    "description",
    "annotation_title",
    "handler_key",
    "rate_limit",
    "task_support",
    "ui_template",
    "ui_template_name",
    "ui_domain",
)
ICON_SCHEMES = ("https:", "data:")
ICON_KEYS = frozenset({"src", "mimeType", "sizes", "theme"})


def json_problem(value: Any, max_bytes: int) -> str | None:
    """Why ``value`` is not acceptable JSON of at most ``max_bytes`` and ``MAX_JSON_DEPTH``
    levels, or None (no recursion: any depth is measured safely)."""
    if depth_over(value, MAX_JSON_DEPTH):
        return f"Nested deeper than {MAX_JSON_DEPTH} levels."
    try:
        encoded = orjson.dumps(value)
    except (TypeError, orjson.JSONEncodeError) as exc:
        return f"Not JSON: {exc}."
    if len(encoded) > max_bytes:
        return f"{len(encoded)} bytes as JSON; the limit is {max_bytes}."
    if b"\\u0000" in encoded and _JSON_NUL.search(encoded):  # PostgreSQL's jsonb refuses it
        return "Contains a NUL character (\\u0000)."
    return None


def icon_problems(icons: Any) -> list[str]:
    """What is wrong with a tool's icons: a list of at most MAX_ICONS objects whose src is an
    https: or data: URL (never javascript: or any other scheme a client might follow)."""
    if not isinstance(icons, list):
        return ["Icons must be a list of objects, each with a string src."]
    if len(icons) > MAX_ICONS:
        return [f"At most {MAX_ICONS} icons ({len(icons)} given)."]
    return [problem for number, icon in enumerate(icons, 1) for problem in _icon_problems(number, icon)]


def _icon_problems(number: int, icon: Any) -> list[str]:
    if not isinstance(icon, dict) or not isinstance(icon.get("src"), str):
        return [f"Icon {number}: must be an object with a string src."]
    problems = []
    if not icon["src"].lower().startswith(ICON_SCHEMES):
        problems.append(f"Icon {number}: the URL must start with https: or data:.")
    unknown = sorted(set(icon) - ICON_KEYS)
    if unknown:
        problems.append(f"Icon {number}: unknown key(s) {', '.join(map(str, unknown))}.")
    if "mimeType" in icon and not isinstance(icon["mimeType"], str):
        problems.append(f"Icon {number}: mimeType must be a string.")
    if "theme" in icon and icon["theme"] not in ("light", "dark"):
        problems.append(f'Icon {number}: theme must be "light" or "dark".')
    if not _names(icon.get("sizes", [])):
        problems.append(f"Icon {number}: sizes must be a list of strings.")
    return problems


def default_input_schema() -> dict[str, Any]:
    # T-4: the recommended schema of a tool without parameters.
    return {"type": "object", "additionalProperties": False}


# One list of a Tool's columns by what they are for. The catalog loads WIRE_FIELDS and
# BINDING_FIELDS (with pk and version), the admin form edits all three groups, and export writes
# them: a new column is added here once.
ANNOTATION_FIELDS: tuple[str, ...] = (
    "annotation_title",
    "read_only_hint",
    "destructive_hint",
    "idempotent_hint",
    "open_world_hint",
    "icons",
    "task_support",
)
"""The hints and presentation of a tools/list entry (the admin shows them as one group)."""
WIRE_FIELDS: tuple[str, ...] = ("name", "title", "description", "input_schema", "output_schema", *ANNOTATION_FIELDS)
"""What a tools/list entry is made of."""
APPROVAL_FIELDS: tuple[str, ...] = ("requires_approval", "approval_timeout")
"""Whether a person must approve each call first, and how long it may wait (the admin's Approval group)."""
BINDING_FIELDS: tuple[str, ...] = (
    "handler_key",
    "handler_config",
    "rate_limit",
    "sensitive_arguments",
    *APPROVAL_FIELDS,
)
"""How a call runs: the tool kind, its config, the rate limit, the audit redactions, approval."""
UI_CSP_FIELDS: dict[str, str] = {
    "ui_connect_domains": "connectDomains",
    "ui_resource_domains": "resourceDomains",
    "ui_frame_domains": "frameDomains",
    "ui_base_uri_domains": "baseUriDomains",
}
"""The CSP origin lists of a tool's UI, by the ``_meta.ui.csp`` key each one fills."""
UI_FIELDS: tuple[str, ...] = (
    "ui_template",
    "ui_template_name",
    "ui_visibility",
    "ui_tools",
    *UI_CSP_FIELDS,
    "ui_permissions",
    "ui_prefers_border",
    "ui_domain",
)
"""The tool's MCP Apps view (the admin's UI group): its document or template, who may call the
tool, the tools the view may call, its CSP (setting the CSP origins is the ``set_ui_domains``
permission's)."""
ACCESS_FIELDS: tuple[str, ...] = ("enabled", "required_scopes")
"""Who sees the tool at all."""
DISCOVERY_FIELDS: tuple[str, ...] = ("always_listed", "tags")
"""How progressive discovery (``DISCOVERY``) shows the tool: in the entry set, and the groups it is found by."""
EDITABLE_FIELDS: tuple[str, ...] = WIRE_FIELDS + BINDING_FIELDS + UI_FIELDS + ACCESS_FIELDS + DISCOVERY_FIELDS

# Tags: a few short words or phrases each (groups such as "billing"), searched by discovery.
MAX_TAGS = 16
TAG_RE = re.compile(r"^[^\W_][\w .\-]{0,39}$")


class TaskSupport(models.TextChoices):
    FORBIDDEN = "forbidden", _("Forbidden")
    OPTIONAL = "optional", _("Optional")
    REQUIRED = "required", _("Required")


assert tuple(TaskSupport.values) == TASK_SUPPORT_VALUES


class UiVisibility(models.TextChoices):
    BOTH = "", _("The model and the app (default)")
    MODEL = "model", _("The model only")
    APP = "app", _("The app only (hidden from the model)")


class UiPermission(models.TextChoices):
    CAMERA = "camera", _("Camera")
    MICROPHONE = "microphone", _("Microphone")
    GEOLOCATION = "geolocation", _("Geolocation")
    CLIPBOARD_WRITE = "clipboardWrite", _("Clipboard write")


assert tuple(UiPermission.values) == PERMISSIONS


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
    handler_key = models.CharField(_("handler"), max_length=200, help_text=_("A tool kind registered in code."))
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
    requires_approval = models.BooleanField(
        _("requires approval"),
        default=False,
        help_text=_(
            "Each call waits until someone with the approve_call permission approves it in the admin "
            "(Call approvals); rejected or undecided calls are refused."
        ),
    )
    approval_timeout = models.PositiveIntegerField(
        _("approval timeout (seconds)"),
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
        help_text=_("How long a call waits for a decision; empty: the site default (APPROVAL_TIMEOUT)."),
    )
    ui_template = models.TextField(
        _("UI template"),
        blank=True,
        help_text=_(
            "The tool's MCP Apps view: HTML served exactly as written (no template syntax: the call's "
            "data reach the view through the app bridge). A fragment is wrapped in a complete HTML5 "
            "document with the app bridge; see the how-to MCP Apps."
        ),
    )
    ui_template_name = models.CharField(
        _("UI template path"),
        max_length=200,
        blank=True,
        help_text=_(
            "Or: the path of a template shipped in the site's code, rendered on the server, under one of "
            "the folders of the UI_TEMPLATE_PREFIXES setting (e.g. mcp_ui/books_list.html)."
        ),
    )
    ui_visibility = models.CharField(
        _("UI visibility"),
        max_length=8,
        blank=True,
        choices=UiVisibility.choices,
        default=UiVisibility.BOTH,
        help_text=_("Who may call the tool: an app-only tool is left out of the tools a model sees."),
    )
    ui_tools = models.JSONField(
        _("tools the view may call"),
        default=list,
        blank=True,
        help_text=_(
            "Names of the tools the view may call through its host (mcpApp.callTool); the admin's preview "
            "calls no other, and asks you before each call. A tool whose UI visibility is the model only "
            "is never callable by a view."
        ),
    )
    ui_connect_domains = models.JSONField(
        _("connect domains"),
        default=list,
        blank=True,
        help_text=_("Origins the view may fetch from (CSP connect-src), e.g. https://api.example.com."),
    )
    ui_resource_domains = models.JSONField(
        _("resource domains"),
        default=list,
        blank=True,
        help_text=_("Origins of scripts, styles, images, fonts and media (e.g. https://*.example.com)."),
    )
    ui_frame_domains = models.JSONField(
        _("frame domains"), default=list, blank=True, help_text=_("Origins the view may embed in iframes.")
    )
    ui_base_uri_domains = models.JSONField(
        _("base URI domains"), default=list, blank=True, help_text=_("Origins allowed as the document's base URI.")
    )
    ui_permissions = models.JSONField(
        _("UI permissions"),
        default=list,
        blank=True,
        help_text=_("Browser features the view asks the host for: camera, microphone, geolocation, clipboardWrite."),
    )
    ui_prefers_border = models.BooleanField(
        _("prefers border"), null=True, blank=True, help_text=_("Whether the host draws a border; empty: host decides.")
    )
    ui_domain = models.CharField(
        _("UI domain"),
        max_length=253,
        blank=True,
        help_text=_("A dedicated sandbox origin for the view, in the host's format (host-specific)."),
    )
    always_listed = models.BooleanField(
        _("always listed"),
        default=False,
        help_text=_(
            "In discovery mode (the DISCOVERY setting) tools/list shows only the tools marked here and the "
            "discovery tools; the others are found by search and called by name. No effect when the mode is off."
        ),
    )
    tags = models.JSONField(
        _("tags"),
        default=list,
        blank=True,
        help_text=_(
            'Groups the tool belongs to, e.g. ["billing", "invoices"] (at most 16, each 1 to 40 letters, digits, '
            "spaces, dots, hyphens or underscores): discovery finds the tool by them."
        ),
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
        permissions = [
            ("try_tool", _("Can try a tool from the admin (runs its handler)")),
            ("set_ui_domains", _("Can set the origins a tool's view may reach (its CSP domains)")),
        ]

    def __str__(self) -> str:
        return self.name

    def save(self, *args: Any, **kwargs: Any) -> None:
        adding = self._state.adding
        if self.pk is not None and not kwargs.get("force_insert"):
            self.version = models.F("version") + 1
        using = kwargs.get("using") or router.db_for_write(Tool, instance=self)
        # The revision row is written in the same transaction, from the saved row (so it holds
        # the bumped version as a number).
        with transaction.atomic(using=using), revision(using=using) as frame:
            super().save(*args, **kwargs)
            CatalogVersion.bump()
            frame.touch([self.pk], RevisionAction.CREATED if adding else RevisionAction.CHANGED)
        if not isinstance(self.version, int):
            self.refresh_from_db(fields=["version"])

    @classmethod
    def snapshots(cls, pks: Iterable[int], using: str) -> dict[int, tuple[str, int, dict[str, Any]]]:
        """(name, version, editable fields) of each tool in ``pks`` as stored, scopes as sorted
        names: what revisions keep and export writes. Two queries per 500 tools."""
        pks = list(pks)
        columns = [name for name in EDITABLE_FIELDS if name != "required_scopes"]
        found: dict[int, tuple[str, int, dict[str, Any]]] = {}
        for start in range(0, len(pks), 500):
            chunk = pks[start : start + 500]
            scopes: dict[int, list[str]] = {}
            links = cls.required_scopes.through.objects.using(using).filter(tool_id__in=chunk)
            for tool_id, scope_name in links.values_list("tool_id", "scope__name"):
                scopes.setdefault(tool_id, []).append(scope_name)
            for row in cls._base_manager.using(using).filter(pk__in=chunk).values("pk", "version", *columns):
                data = {
                    name: sorted(scopes.get(row["pk"], ())) if name == "required_scopes" else row[name]
                    for name in EDITABLE_FIELDS
                }
                found[row["pk"]] = (row["name"], row["version"], data)
        return found

    @staticmethod
    def bump_catalog() -> None:
        CatalogVersion.bump()

    def clean_fields(self, exclude: Collection[str] | None = None) -> None:
        """Each JSON field's depth and size first: a field over them is not validated further
        (Django's own check serialises it recursively)."""
        exclude = set(exclude or ())
        errors: dict[str, list[str]] = {}
        for field, most in MAX_JSON_BYTES.items():
            if field not in exclude:
                problem = json_problem(getattr(self, field), most)
                if problem is not None:
                    errors[field] = [problem]
                    exclude.add(field)
        try:
            super().clean_fields(exclude=exclude)
        except ValidationError as exc:
            errors.update(exc.message_dict)
        if errors:
            raise ValidationError(errors)

    def clean(self) -> None:
        errors: dict[str, list[str]] = {}
        # Fields already refused for their depth or size are not looked into again.
        oversized = {field for field, most in MAX_JSON_BYTES.items() if json_problem(getattr(self, field), most)}
        self._clean_text(errors)
        self._clean_handler(errors, oversized)
        self._clean_schemas(errors, oversized)
        if "icons" not in oversized:
            errors.setdefault("icons", []).extend(icon_problems(self.icons))
        if not _names(self.sensitive_arguments):
            errors.setdefault("sensitive_arguments", []).append("A list of argument names (strings).")
        if "tags" not in oversized:
            errors.setdefault("tags", []).extend(tag_problems(self.tags))
        for field, messages in ui_problems(self, oversized).items():
            errors.setdefault(field, []).extend(messages)
        errors = {field: messages for field, messages in errors.items() if messages}
        if errors:
            raise ValidationError(errors)

    def _clean_text(self, errors: dict[str, list[str]]) -> None:
        for field in TEXT_FIELDS:
            if "\x00" in str(getattr(self, field) or ""):  # PostgreSQL refuses it in text
                errors.setdefault(field, []).append("Contains a NUL character.")
        if isinstance(self.description, str) and len(self.description) > MAX_DESCRIPTION_CHARS:
            errors.setdefault("description", []).append(
                f"At most {MAX_DESCRIPTION_CHARS} characters ({len(self.description)} given)."
            )

    def _clean_handler(self, errors: dict[str, list[str]], oversized: Collection[str]) -> None:
        kind = registry.get(self.handler_key)
        if not self.handler_key:
            return  # "This field cannot be blank" says it already
        if kind is None:
            errors.setdefault("handler_key", []).append(f"No handler is registered under {self.handler_key!r}.")
            return
        if "handler_config" in oversized:
            return
        for message in kind.config_errors(self.handler_config):
            errors.setdefault("handler_config", []).append(message)
        if "handler_config" in errors:
            return
        # A kind that derives its tools' schemas from the config (contrib.drf) sets them.
        try:
            derived = kind.derived_schemas(self.handler_config)
        except ValueError as exc:
            errors.setdefault("handler_config", []).append(str(exc))
            return
        if derived is not None:
            self.input_schema, self.output_schema = derived

    def _clean_schemas(self, errors: dict[str, list[str]], oversized: Collection[str]) -> None:
        """Every problem of a schema, each with its path, so one save shows them all."""
        for field, problems in (("input_schema", input_schema_problems), ("output_schema", output_schema_problems)):
            value = getattr(self, field)
            if field == "output_schema" and value is None:
                continue
            problem = json_problem(value, MAX_JSON_BYTES[field])
            if problem is not None:
                if field not in oversized:  # a schema a kind derived (clean_fields saw the row's own)
                    errors.setdefault(field, []).append(problem)
                continue
            errors.setdefault(field, []).extend(problems(value))

    @property
    def has_ui(self) -> bool:
        return bool(self.ui_template or self.ui_template_name)


def _names(value: Any) -> bool:
    """Whether ``value`` is a list of strings."""
    return isinstance(value, list) and all(isinstance(n, str) for n in value)


def tag_problems(tags: Any) -> list[str]:
    """What is wrong with a tool's tags: a list of at most MAX_TAGS distinct short words or phrases."""
    if not isinstance(tags, list) or not all(isinstance(tag, str) for tag in tags):
        return ["A list of tags (strings)."]
    if len(tags) > MAX_TAGS:
        return [f"At most {MAX_TAGS} tags ({len(tags)} given)."]
    problems = [
        f"Tag {number}: 1 to 40 letters, digits, spaces, dots, hyphens or underscores, starting with a letter or digit."
        for number, tag in enumerate(tags, 1)
        if not TAG_RE.match(tag)
    ]
    if len({tag.casefold() for tag in tags}) < len(tags):
        problems.append("Each tag once (tags are compared without case).")
    return problems


def ui_problems(tool: Tool, oversized: Collection[str] = ()) -> dict[str, list[str]]:
    """What is wrong with a tool's UI fields: each CSP list holds origins, the permissions are
    known names, the template is bounded, and the UI's settings need a UI to apply to."""
    errors: dict[str, list[str]] = {}
    for field in UI_CSP_FIELDS:
        if field not in oversized:
            found = _origins_problems(getattr(tool, field))
            if found:
                errors[field] = found
    _permissions_and_domain(tool, oversized, errors)
    _template_and_visibility(tool, errors)
    if "ui_tools" not in oversized:
        problems = _view_tools_problems(tool)
        if problems:
            errors["ui_tools"] = problems
    if "ui_template" not in errors and "ui_template_name" not in errors and tool.has_ui:
        for field, messages in template_problems(tool.ui_template, tool.ui_template_name).items():
            errors.setdefault(field, []).extend(messages)
    return errors


def _permissions_and_domain(tool: Tool, oversized: Collection[str], errors: dict[str, list[str]]) -> None:
    permissions = tool.ui_permissions
    if "ui_permissions" not in oversized and (
        not isinstance(permissions, list) or not all(p in PERMISSIONS for p in permissions)
    ):
        errors["ui_permissions"] = [f"A list of names among {', '.join(PERMISSIONS)}."]
    if tool.ui_domain:
        problem = domain_problem(tool.ui_domain)
        if problem is not None:
            errors["ui_domain"] = [problem]


def _template_and_visibility(tool: Tool, errors: dict[str, list[str]]) -> None:
    if isinstance(tool.ui_template, str) and len(tool.ui_template) > MAX_UI_TEMPLATE_CHARS:
        errors["ui_template"] = [f"At most {MAX_UI_TEMPLATE_CHARS} characters ({len(tool.ui_template)} given)."]
    if tool.ui_template and tool.ui_template_name:
        errors["ui_template_name"] = ["Give a template or a template path, not both."]
    if tool.ui_visibility == UiVisibility.APP and not tool.has_ui:
        errors["ui_visibility"] = ["An app-only tool needs a UI (a template or a template path)."]


def _origins_problems(value: Any) -> list[str]:
    """What is wrong with one of the CSP lists of origins."""
    if not isinstance(value, list):
        return ["A list of origins."]
    if len(value) > MAX_UI_ORIGINS:
        return [f"At most {MAX_UI_ORIGINS} origins ({len(value)} given)."]
    return [p for p in map(origin_problem, value) if p is not None]


def _view_tools_problems(tool: Tool) -> list[str]:
    problems = ui_tools_problems(tool.ui_tools)
    if not problems and tool.ui_tools and not tool.has_ui:
        return ["Only a view calls tools: give the tool a UI (a template or a template path)."]
    return problems


def ui_tools_problems(names: Any) -> list[str]:
    """What is wrong with a view's list of the tools it may call: tool names, at most
    MAX_UI_TOOLS, each once. A name need not be a tool yet (an import may bring it later); a
    call of a missing tool is refused when it is made."""
    if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
        return ["A list of tool names."]
    if len(names) > MAX_UI_TOOLS:
        return [f"At most {MAX_UI_TOOLS} tools ({len(names)} given)."]
    problems = [f"{name[:130]!r} is not a tool name." for name in names if not TOOL_NAME_RE.fullmatch(name)]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        problems.append(f"Named more than once: {', '.join(twice)}.")
    return problems


_batch: ContextVar[list[bool] | None] = ContextVar("mcp_tools_catalog_batch", default=None)


# The version SELECT per database alias (built on first use).
_VERSION_SQL: dict[str, str] = {}


class _ThreadConnections(threading.local):
    """This thread's connection per database alias, as ``connections[alias]`` gave it: Django
    keeps one per thread for good (the same object), and asking its per-thread store costs a
    raised and caught RuntimeError each time. One entry per database at most."""

    def __init__(self) -> None:
        self.by_alias: dict[str, Any] = {}


_thread_connections = _ThreadConnections()


def _connection(alias: str) -> Any:
    found = _thread_connections.by_alias.get(alias)
    if found is None:
        found = _thread_connections.by_alias[alias] = connections[alias]
    return found


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
        """The current number; read on every request, so one plain SELECT on the driver's
        cursor when it can (``raw.fetch_one``)."""
        connection = _connection(router.db_for_read(cls))
        sql = _VERSION_SQL.get(connection.alias)
        if sql is None:
            table = connection.ops.quote_name(cls._meta.db_table)
            sql = _VERSION_SQL[connection.alias] = f"SELECT version FROM {table} WHERE id = 1"  # noqa: S608 - no user input
        row = fetch_one(connection, sql)
        walmark.confirm(connection)  # (once per connection: later marks of it are trusted)
        return int(row[0]) if row else 0

    @classmethod
    def commit_mark(cls) -> bytes | None:
        """What changes with every commit to the database, read without a query; None where
        it cannot be had (not SQLite in WAL mode, in a transaction: see ``walmark``)."""
        return walmark.commit_mark(_connection(router.db_for_read(cls)))

    @classmethod
    @contextlib.contextmanager
    def batch(cls) -> Iterator[None]:
        """Inside, ``bump()`` only notes a change and the number moves once at the end: a bulk
        action or an import of 500 tools is one catalog change. Use it inside a transaction."""
        if _batch.get() is not None:
            yield
            return
        pending = [False]
        token = _batch.set(pending)
        try:
            yield
        finally:
            _batch.reset(token)
        if pending[0]:
            cls.bump()

    @classmethod
    def bump(cls) -> None:
        """Move the number on, inside the caller's transaction; ``catalog_changed`` tells the
        layers that care (the list_changed fan-out publishes once the transaction commits)."""
        pending = _batch.get()
        if pending is not None:
            pending[0] = True
            return
        updated = cls.objects.filter(pk=1).update(version=models.F("version") + 1, updated_at=timezone.now())
        if not updated:
            _, created = cls.objects.get_or_create(pk=1, defaults={"version": 1})
            if not created:  # another transaction created it meanwhile
                cls.objects.filter(pk=1).update(version=models.F("version") + 1, updated_at=timezone.now())
        # After the UPDATE: outside a transaction receivers run at once, and listeners must
        # read the new version when they hear of it.
        catalog_changed.send(sender=cls, using=router.db_for_write(cls))


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
