"""Admin forms: the handler picked from the registry, JSON shown indented and its errors placed."""

from __future__ import annotations

import json
import re
from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from ..models import (
    ANNOTATION_FIELDS,
    APPROVAL_FIELDS,
    DISCOVERY_FIELDS,
    EDITABLE_FIELDS,
    UI_CSP_FIELDS,
    UI_FIELDS,
    Tool,
    UiPermission,
)
from ..protocol.versions import LATEST, SUPPORTED_VERSIONS
from ..registry import registry
from .config_fields import HandlerConfigFieldsMixin
from .schema_forms import SchemaFields

__all__ = [
    "ImportForm",
    "TOOL_FIELDSETS",
    "ToolForm",
    "TryForm",
]

# How the admin arranges the model's one list of editable fields (models.tools.EDITABLE_FIELDS);
# tests/unit checks that the two name the same fields.
TOOL_FIELDSETS: tuple[tuple[str | None, Any], ...] = (
    (None, {"fields": ("name", "title", "description", "enabled")}),
    ("Handler", {"fields": ("handler_key", "handler_config")}),
    ("Access", {"fields": ("required_scopes", "rate_limit", "sensitive_arguments")}),
    ("Approval", {"fields": APPROVAL_FIELDS}),
    ("Discovery", {"fields": DISCOVERY_FIELDS}),
    ("Schemas", {"fields": ("input_schema", "output_schema")}),
    ("Annotations", {"fields": ANNOTATION_FIELDS}),
    ("UI (MCP Apps)", {"fields": UI_FIELDS, "classes": ("collapse",)}),
)

_JSON_ATTRS = {"class": "vLargeTextField mcp-json", "spellcheck": "false", "style": "font-family: monospace"}


class PrettyJSONField(forms.JSONField):
    """JSON in a textarea, shown indented; a syntax error says its line and column."""

    default_error_messages = {"invalid": "Invalid JSON at line %(line)s, column %(column)s: %(message)s."}

    def __init__(self, *, rows: int = 10, **kwargs: Any) -> None:
        kwargs.setdefault("widget", forms.Textarea(attrs={**_JSON_ATTRS, "rows": rows}))
        super().__init__(**kwargs)

    def to_python(self, value: Any) -> Any:
        if self.disabled or value in self.empty_values or not isinstance(value, str):
            return super().to_python(value)
        try:
            return json.loads(value, cls=self.decoder)
        except json.JSONDecodeError as exc:
            raise ValidationError(
                self.error_messages["invalid"],
                code="invalid",
                params={"line": exc.lineno, "column": exc.colno, "message": exc.msg},
            ) from exc
        except RecursionError as exc:  # Python's parser recurses per level
            raise ValidationError("Invalid JSON: nested too deep.", code="invalid") from exc

    def bound_data(self, data: Any, initial: Any) -> Any:
        try:
            return super().bound_data(data, initial)
        except RecursionError:
            return forms.fields.InvalidJSONInput(data)

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, forms.fields.InvalidJSONInput):
            return value  # what the person typed, unchanged, next to its error
        if value is None:
            return ""  # an empty box rather than "null"
        return json.dumps(value, indent=2, ensure_ascii=False, cls=self.encoder)


_SIZES_RE = re.compile(r"^(any|\d+x\d+)(,(any|\d+x\d+))*$")


class IconsField(forms.CharField):
    """Icons as lines: ``src [mimeType] [sizes] [light|dark]``, e.g.
    ``https://example.com/i.png image/png 48x48,96x96 dark``."""

    widget = forms.Textarea(attrs={**_JSON_ATTRS, "rows": 3})

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("required", False)
        kwargs.setdefault(
            "help_text",
            "One icon per line: the URL (https: or data:), then optionally its MIME type, sizes "
            '(e.g. "48x48,96x96" or "any") and theme ("light" or "dark"), separated by spaces.',
        )
        super().__init__(strip=True, **kwargs)

    def prepare_value(self, value: Any) -> Any:
        if not isinstance(value, list):
            return value
        lines = []
        for icon in value:
            if not isinstance(icon, dict):
                return json.dumps(value)
            parts = [str(icon.get("src", ""))]
            if icon.get("mimeType"):
                parts.append(str(icon["mimeType"]))
            if icon.get("sizes"):
                parts.append(",".join(map(str, icon["sizes"])))
            if icon.get("theme"):
                parts.append(str(icon["theme"]))
            lines.append(" ".join(parts))
        return "\n".join(lines)

    def to_python(self, value: Any) -> list[dict[str, Any]]:  # type: ignore[override]
        text = super().to_python(value) or ""
        icons: list[dict[str, Any]] = []
        problems: list[str] = []
        for number, line in enumerate(text.splitlines(), 1):
            words = line.split()
            if not words:
                continue
            src, rest = words[0], words[1:]
            if not src.lower().startswith(("https:", "data:")):
                problems.append(f"Line {number}: the icon URL must start with https: or data:")
            icon: dict[str, Any] = {"src": src}
            for word in rest:
                if not _icon_word(icon, word):
                    problems.append(f"Line {number}: {word!r} is not a MIME type, sizes (48x48) or light/dark")
            icons.append(icon)
        if problems:
            raise ValidationError(problems)
        return icons


def _icon_word(icon: dict[str, Any], word: str) -> bool:
    """Set what the word after an icon's URL says (its MIME type, theme or sizes); False if none."""
    if "/" in word and "mimeType" not in icon:
        icon["mimeType"] = word
    elif word in ("light", "dark") and "theme" not in icon:
        icon["theme"] = word
    elif _SIZES_RE.match(word) and "sizes" not in icon:
        icon["sizes"] = word.split(",")
    else:
        return False
    return True


class NamesField(forms.CharField):
    """A list of names written separated by commas or spaces."""

    def prepare_value(self, value: Any) -> Any:
        return ", ".join(map(str, value)) if isinstance(value, list) else value

    def to_python(self, value: Any) -> list[str]:  # type: ignore[override]
        text = super().to_python(value) or ""
        return [name for name in re.split(r"[\s,]+", text) if name]


class TagsField(NamesField):
    """Tags written separated by commas (a tag may hold spaces)."""

    def to_python(self, value: Any) -> list[str]:  # type: ignore[override]
        text = forms.CharField.to_python(self, value) or ""
        return [tag.strip() for tag in text.split(",") if tag.strip()]


def handler_choices(current: str | None = None) -> list[tuple[str, SafeString | str]]:
    """Each registered tool kind with its label, key and description."""
    choices: list[tuple[str, SafeString | str]] = [
        (
            kind.key,
            format_html(
                "<strong>{}</strong> <code>{}</code>{}",
                kind.label or kind.key,
                kind.key,
                format_html("<br><span class='help'>{}</span>", kind.description) if kind.description else "",
            ),
        )
        for kind in registry
    ]
    if current and current not in registry:
        choices.append((current, format_html("<code>{}</code> (not registered: choose another)", current)))
    return choices


def config_schemas_help() -> SafeString:
    """What each kind's config holds, one line a kind (its keys, their types, which are
    required), folded under a summary: the raw JSON Schemas of every kind were a wall of text."""
    schemas = [(kind.key, kind.get_config_schema()) for kind in registry]
    kinds = [(key, schema) for key, schema in schemas if schema is not None]
    if not kinds:
        return format_html("{}", "A JSON object; no registered handler reads a config.")
    return format_html(
        "A JSON object checked against the chosen handler's config schema. For a kind with its own "
        "fields below, this box is read when you change it (changing both is refused unless they agree)."
        '<details class="mcp-config-keys"><summary>Config keys of each tool kind</summary>{}</details>',
        format_html_join("", "<div><code>{}</code>: {}</div>", ((key, _config_keys(schema)) for key, schema in kinds)),
    )


def _config_keys(schema: Any) -> str:
    """``task`` (one of a, b; required); ``timeout`` (number); ...: a config schema in one line."""
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(properties, dict) or not properties:
        return "any JSON object" if schema in ({}, {"type": "object"}) else "see the kind's documentation"
    required = set(schema.get("required") or ())
    return "; ".join(
        f"{name} ({_config_key_kind(spec)}{', required' if name in required else ''})"
        for name, spec in properties.items()
    )


def _config_key_kind(spec: Any) -> str:
    """``number``, ``string or null``, ``one of a, b``: what one config key holds."""
    kind = spec.get("type", "any") if isinstance(spec, dict) else "any"
    if isinstance(kind, list):
        kind = " or ".join(str(k) for k in kind)
    choices = spec.get("enum") if isinstance(spec, dict) else None
    if isinstance(choices, list) and choices:  # the site's tasks, routes, ...: what to write
        shown = ", ".join(str(c) for c in choices[:MAX_CHOICES_SHOWN])
        more = f" and {len(choices) - MAX_CHOICES_SHOWN} more" if len(choices) > MAX_CHOICES_SHOWN else ""
        kind = f"one of {shown}{more}"
    return str(kind)


MAX_CHOICES_SHOWN = 20


class ToolForm(HandlerConfigFieldsMixin, forms.ModelForm):  # type: ignore[type-arg]
    handler_key = forms.ChoiceField(label="Handler", choices=(), widget=forms.RadioSelect)
    handler_config = PrettyJSONField(label="Handler config", required=False, rows=4)
    input_schema = PrettyJSONField(label="Input schema", rows=14)
    output_schema = PrettyJSONField(
        label="Output schema", required=False, rows=8, help_text="Optional: JSON Schema of structuredContent."
    )
    icons = IconsField(label="Icons")
    sensitive_arguments = NamesField(
        label="Sensitive arguments",
        required=False,
        help_text="Argument names the audit trail redacts, separated by commas (writeOnly properties are too).",
    )

    tags = TagsField(
        label="Tags",
        required=False,
        help_text=(
            "Groups the tool belongs to, separated by commas (e.g. billing, invoices): progressive discovery "
            "finds the tool by them. At most 16, each 1 to 40 letters, digits, spaces, dots, hyphens or underscores."
        ),
    )

    ui_template = forms.CharField(
        label="UI template",
        required=False,
        strip=False,
        widget=forms.Textarea(attrs={**_JSON_ATTRS, "rows": 14}),
    )
    ui_permissions = forms.MultipleChoiceField(
        label="UI permissions",
        required=False,
        choices=UiPermission.choices,
        widget=forms.CheckboxSelectMultiple,
        help_text="Browser features the view asks the host for; hosts may refuse them.",
    )

    class Meta:
        model = Tool
        fields = EDITABLE_FIELDS
        help_texts = {
            "task_support": (
                "Forbidden (the default): every client calls it inline. Optional: clients that make tasks get "
                "one, the others (the official Python SDK among them) still call it inline; the safe choice for "
                "a long tool. Required: only clients that make tasks can call it. Tasks need a Celery worker."
            ),
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name in ("ui_tools", *UI_CSP_FIELDS):
            if name not in self.fields:
                continue  # read-only here (setting the origins is a permission of its own)
            model_field: Any = Tool._meta.get_field(name)
            self.fields[name] = NamesField(
                label=str(model_field.verbose_name).capitalize(),
                required=False,
                help_text=f"{model_field.help_text} Separated by spaces or commas.",
            )
        self.fields["ui_template"].help_text = Tool._meta.get_field("ui_template").help_text
        current = self.instance.handler_key if self.instance and self.instance.pk else None
        self.fields["handler_key"].choices = handler_choices(current)  # type: ignore[attr-defined]
        self.fields["handler_config"].help_text = config_schemas_help()
        self.fields["input_schema"].help_text = Tool._meta.get_field("input_schema").help_text

    def clean_handler_config(self) -> Any:
        value = self.cleaned_data.get("handler_config")
        return {} if value is None else value

    def clean(self) -> dict[str, Any]:
        cleaned: dict[str, Any] = super().clean() or {}
        # A view that calls its own tool keeps doing so when the tool is renamed.
        old, new, names = self.initial.get("name"), cleaned.get("name"), cleaned.get("ui_tools")
        if (
            self.instance.pk is not None
            and old
            and new
            and old != new
            and isinstance(names, list)
            and old in names
            and "ui_tools" not in self.changed_data
        ):
            cleaned["ui_tools"] = [new if name == old else name for name in names]
            self.instance.ui_tools = cleaned["ui_tools"]
        return cleaned


class TryForm(forms.Form):
    """Arguments for one call of a saved tool, and the revision to answer in.

    When the tool's input schema is form-able, its properties are fields too (``arg__<name>``):
    the JSON box is read when it is not empty, the fields otherwise; both filled in is refused
    unless they say the same.
    """

    ARG_PREFIX = "arg__"

    arguments = PrettyJSONField(label="Arguments", rows=8, required=False, initial=dict, help_text="A JSON object.")
    protocol_version = forms.ChoiceField(
        label="Protocol revision",
        choices=[(v, v) for v in reversed(SUPPORTED_VERSIONS)],
        initial=LATEST,
        help_text="The result is shaped as this revision's clients receive it.",
    )

    def __init__(self, *args: Any, input_schema: Any = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.argument_fields = SchemaFields.build(input_schema, self.ARG_PREFIX)
        if self.argument_fields is not None:
            self.fields.update(self.argument_fields.fields)
            self.fields["arguments"].initial = None
            self.fields["arguments"].label = "Arguments as JSON"
            self.fields[
                "arguments"
            ].help_text = "A JSON object. Leave it empty to send the fields above; when it is filled in, it is sent."

    def schema_fields(self) -> list[Any]:
        return [self[name] for name in self.argument_fields.names] if self.argument_fields else []

    def other_fields(self) -> list[Any]:
        return [field for field in self if not field.name.startswith(self.ARG_PREFIX)]

    def clean_arguments(self) -> Any:
        value = self.cleaned_data.get("arguments")
        if value is not None and not isinstance(value, dict):
            raise ValidationError("Tool arguments are a JSON object, e.g. {}.")
        return value

    def clean(self) -> dict[str, Any]:
        cleaned: dict[str, Any] = super().clean() or {}
        typed = cleaned.get("arguments")
        group = self.argument_fields
        if group is None or "arguments" in self.errors:
            if group is not None:
                group.drop_errors(self)
            cleaned["arguments"] = typed or {}
            return cleaned
        fields_changed = group.changed(self)
        if typed is not None and not fields_changed:  # the box is read
            group.drop_errors(self)
            return cleaned
        if any(name in self.errors for name in group.names):
            return cleaned
        self._take_fields(group, cleaned, typed)
        return cleaned

    def _take_fields(self, group: SchemaFields, cleaned: dict[str, Any], typed: Any) -> None:
        """The arguments the fields give, unless the box holds others or the schema refuses them."""
        value = group.assemble(cleaned)
        if typed is not None and typed != value:
            self.add_error(
                "arguments", "Both the JSON box and the fields are filled in, and they differ: empty one of them."
            )
        elif group.check(self, value, fallback="arguments"):
            cleaned["arguments"] = value


class ImportForm(forms.Form):
    file = forms.FileField(label="Export file", help_text="A JSON file written by mcp_export or Export.")
    dry_run = forms.BooleanField(label="Dry run: validate and report, write nothing", required=False)
