"""The handler config as fields generated from each kind's config schema, next to the raw JSON.

Every registered kind whose config schema is form-able (see ``schema_forms``) gets a group of
fields named ``config__<kind key>__<property>``; only the group of the chosen ``handler_key`` is
read. Which of that group and the raw JSON box ``handler_config`` gives the config:

- the JSON box when it was changed (and is not empty) and the fields were not;
- the fields when they were changed and the box was not (or was emptied); properties the
  schema does not describe, or whose field the submitted data leaves out, keep their stored
  values when the kind stays the same;
- both changed: the form is refused unless they say the same, so no input is dropped silently;
- neither changed: the stored config when the kind stays the same (nothing is rewritten),
  otherwise the fields (their defaults, on a new tool or a new kind).

Kinds whose schema is not form-able (or that have none) are edited in the JSON box only.
"""

from __future__ import annotations

from typing import Any

from django import forms

from ..registry import registry
from .schema_forms import SchemaFields

__all__ = ["HandlerConfigFieldsMixin", "config_fieldsets"]

PREFIX = "config__"


def config_field_prefix(key: str) -> str:
    return f"{PREFIX}{key}__"


def config_fieldsets() -> list[tuple[str, dict[str, Any]]]:
    """One admin fieldset per kind with generated config fields, titled with the kind."""
    sets = []
    for kind in registry:
        group = SchemaFields.build(kind.get_config_schema(), config_field_prefix(kind.key))
        if group is not None:
            title = f"Handler config: {kind.label or kind.key} ({kind.key})"
            sets.append((title, {"fields": group.names, "classes": ("mcp-config",)}))
    return sets


class HandlerConfigFieldsMixin(forms.ModelForm):  # type: ignore[type-arg]
    """Adds the generated config groups to the tool form and decides which input is read."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.config_groups: dict[str, SchemaFields] = {}
        self._config_errors: list[str] | None = None  # set when the config is read from the fields
        self._config_group: SchemaFields | None = None
        for kind in registry:
            group = SchemaFields.build(kind.get_config_schema(), config_field_prefix(kind.key))
            if group is None:
                continue
            for name, field in group.fields.items():
                field.widget.attrs["data-mcp-kind"] = kind.key
                self.fields[name] = field
            self.config_groups[kind.key] = group
        stored = self.config_groups.get(self.instance.handler_key) if self.instance.pk else None
        if stored is not None:
            self.initial.update(stored.initial(self.instance.handler_config))

    def clean(self) -> dict[str, Any]:
        cleaned: dict[str, Any] = super().clean() or {}
        key = cleaned.get("handler_key")
        self._drop_other_groups(key)
        group = self.config_groups.get(str(key))
        if group is None:
            return cleaned
        if "handler_config" in self.errors:
            group.drop_errors(self)
            return cleaned
        typed = cleaned.get("handler_config")
        json_changed = self._json_changed(typed)
        fields_changed = group.changed(self)
        same_kind = self._same_kind(key)
        if not fields_changed and (json_changed or same_kind):
            group.drop_errors(self)  # the box is read: the fields' values are not used
            return cleaned
        self._config_errors, self._config_group = [], group
        if any(name in self.errors for name in group.names):
            return cleaned
        value = self._config_from_fields(group, cleaned, same_kind=same_kind)
        self._take_config(group, cleaned, value, differs=json_changed and value != typed)
        return cleaned

    def _json_changed(self, typed: Any) -> bool:
        return "handler_config" in self.changed_data and typed not in (None, {})

    def _same_kind(self, key: Any) -> bool:
        """Whether the tool keeps the kind it had when stored."""
        return bool(self.instance.pk) and self.instance.handler_key == key

    def _drop_other_groups(self, key: Any) -> None:
        """The errors of the other kinds' fields: they are not used."""
        for other, fields in self.config_groups.items():
            if other != key:
                fields.drop_errors(self)

    def _take_config(
        self, group: SchemaFields, cleaned: dict[str, Any], value: dict[str, Any], *, differs: bool
    ) -> None:
        """The config the fields give, unless the raw JSON was changed too (``differs``: to
        another value) or the kind's schema refuses it."""
        if differs:
            message = (
                "You changed both the raw JSON and the fields of this handler's config, and they differ: "
                "undo one of the two changes."
            )
            self._config_errors = [*(self._config_errors or []), message]
            self.add_error("handler_config", message)
            return
        if group.check(self, value, fallback="handler_config"):
            cleaned["handler_config"] = value
        else:
            self._config_errors = [str(m) for m in self.errors.get("handler_config", [])]

    def _config_from_fields(self, group: SchemaFields, cleaned: dict[str, Any], *, same_kind: bool) -> dict[str, Any]:
        """The config the fields give; properties the fields do not show, or that the data
        leaves out, keep their stored values."""
        stored = self.instance.handler_config if same_kind and isinstance(self.instance.handler_config, dict) else {}
        omitted = group.omitted(self)
        kept = {k: v for k, v in stored.items() if group.prefix + k not in group.fields or group.prefix + k in omitted}
        return {**group.assemble(cleaned), **kept}

    def _post_clean(self) -> None:
        super()._post_clean()  # type: ignore[misc]
        group = self._config_group
        if self._config_errors is None or group is None:
            return
        # The config was read from the fields and was refused: the model's messages about
        # handler_config repeat the form's (or judge the unused box), so only the form's stay.
        if self._config_errors:
            self.errors["handler_config"] = self.error_class(self._config_errors)
        elif any(name in self.errors for name in group.names):
            self.errors.pop("handler_config", None)
