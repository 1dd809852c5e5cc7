"""Admin actions of a model's ModelAdmin served as tools: which ones a toolset names, as the
ModelAdmin has them, and the schemas of their tools (``{"ids": [...]}`` in, the ids and the
messages out). ``handlers.run_action`` runs them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.contrib.admin.utils import model_format_dict

from . import schemas as s
from .toolsets import ModelToolset

__all__ = ["AdminAction", "action_schemas", "resolve_actions"]


@dataclass(frozen=True)
class AdminAction:
    """One admin action served as a tool: its ModelAdmin's function, name and description."""

    name: str
    func: Callable[..., Any]
    description: str
    model_admin: Any
    destructive: bool
    allowed_permissions: tuple[str, ...]  # any one of them (ModelAdmin.has_<perm>_permission)


def resolve_actions(toolset: ModelToolset) -> dict[str, AdminAction]:
    """The toolset's ``actions`` as the model's ModelAdmin has them (ValueError naming what is
    wrong: no ModelAdmin, or a name that is not one of its actions)."""
    if not toolset.actions:
        return {}
    model_admin = toolset.get_model_admin()
    if model_admin is None:
        raise ValueError(f"Toolset {toolset.key!r}: {toolset.opts.label} has no ModelAdmin, so it has no actions.")
    available = dict(_base_actions(model_admin))
    missing = [name for name in toolset.actions if name not in available]
    if missing:
        raise ValueError(
            f"Toolset {toolset.key!r}: {missing} not among the actions of {type(model_admin).__name__} "
            f"({', '.join(sorted(available)) or 'none'})."
        )
    formats = model_format_dict(toolset.opts)
    out: dict[str, AdminAction] = {}
    for name in toolset.actions:
        func, description = available[name]
        try:
            text = str(description) % formats
        except (KeyError, TypeError, ValueError):
            text = str(description)
        out[name] = AdminAction(
            name=name,
            func=func,
            description=text,
            model_admin=model_admin,
            destructive=name in toolset.destructive_actions,
            allowed_permissions=tuple(getattr(func, "allowed_permissions", ())),
        )
    return out


def _base_actions(model_admin: Any) -> list[tuple[str, tuple[Callable[..., Any], str]]]:
    """The ModelAdmin's actions before any request-based filtering, as (name, (func, description)).

    Django 6.1 gives ``Action`` objects (unpacking one is deprecated) where 5.2 and 6.0 give
    ``(func, name, description)`` tuples."""
    found = []
    for action in model_admin._get_base_actions():
        if isinstance(action, tuple):
            func, name, description = action
        else:
            func, name, description = action.func, action.name, action.description
        found.append((name, (func, description)))
    return found


def action_schemas(toolset: ModelToolset) -> tuple[dict[str, Any], dict[str, Any]]:
    pk = s.model_field_schema(toolset.opts.pk)
    plural = str(toolset.opts.verbose_name_plural)
    input_schema = {
        "type": "object",
        "properties": {
            "ids": {
                "type": "array",
                "items": pk,
                "minItems": 1,
                "maxItems": toolset.max_action_ids,
                "uniqueItems": True,
                "description": f"The {plural} to run the action on, by id.",
            }
        },
        "required": ["ids"],
        "additionalProperties": False,
    }
    output = {
        "type": "object",
        "properties": {
            "ids": {"type": "array", "items": pk, "description": f"The {plural} the action ran on."},
            "messages": {
                "type": "array",
                "description": "What the action told the user.",
                "items": {
                    "type": "object",
                    "properties": {
                        "level": {"enum": ["debug", "info", "success", "warning", "error"]},
                        "message": {"type": "string"},
                    },
                    "required": ["level", "message"],
                    "additionalProperties": False,
                },
            },
        },
        "required": ["ids", "messages"],
        "additionalProperties": False,
    }
    return input_schema, output
