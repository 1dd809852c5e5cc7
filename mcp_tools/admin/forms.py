"""Admin forms: handler keys come from the registry, schemas are checked as JSON Schema."""

from __future__ import annotations

from typing import Any

from django import forms

from ..models import EDITABLE_FIELDS, Tool
from ..registry import registry

# How the admin arranges the model's one list of editable fields (models.tools.EDITABLE_FIELDS);
# tests/unit checks that the two name the same fields.
TOOL_FIELDSETS: tuple[tuple[str | None, Any], ...] = (
    (None, {"fields": ("name", "title", "description", "enabled")}),
    ("Handler", {"fields": ("handler_key", "handler_config")}),
    ("Access", {"fields": ("required_scopes", "rate_limit", "sensitive_arguments")}),
    ("Schemas", {"fields": ("input_schema", "output_schema")}),
    (
        "Annotations",
        {
            "fields": (
                "annotation_title",
                "read_only_hint",
                "destructive_hint",
                "idempotent_hint",
                "open_world_hint",
                "icons",
                "task_support",
            )
        },
    ),
)


class ToolForm(forms.ModelForm):  # type: ignore[type-arg]
    handler_key = forms.ChoiceField(label="Handler", choices=())

    class Meta:
        model = Tool
        fields = EDITABLE_FIELDS

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        choices = registry.choices()
        current = self.instance.handler_key if self.instance and self.instance.pk else None
        if current and current not in registry:
            choices.append((current, f"{current} (not registered)"))
        self.fields["handler_key"].choices = choices  # type: ignore[attr-defined]
