"""Compare two revisions of a tool, and restore an older one (as a new revision)."""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ValidationError
from django.db import router, transaction

from ..models import EDITABLE_FIELDS, RevisionAction, Scope, Tool, ToolRevision, revision

__all__ = ["compare", "current_state", "restore"]


@dataclass(frozen=True, slots=True)
class FieldChange:
    name: str
    label: str
    before: str
    after: str
    lines: tuple[tuple[str, str], ...]  # (kind, line): kind is "+", "-", " " or "@"


def as_text(value: Any) -> str:
    """A field value as people read it: strings as they are, the rest as indented JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False)


def label_of(name: str) -> str:
    return str(getattr(Tool._meta.get_field(name), "verbose_name", name))


def compare(before: dict[str, Any], after: dict[str, Any]) -> list[FieldChange]:
    """The fields that differ between two states, each with a line diff of its text."""
    changes = []
    for name in EDITABLE_FIELDS:
        old, new = before.get(name), after.get(name)
        if old == new:
            continue
        old_text, new_text = as_text(old), as_text(new)
        lines = []
        for line in difflib.unified_diff(old_text.splitlines(), new_text.splitlines(), lineterm="", n=2):
            if line.startswith(("---", "+++")):
                continue
            kind = "@" if line.startswith("@@") else line[:1]
            lines.append((kind, line[1:] if kind != "@" else line))
        changes.append(FieldChange(name, label_of(name), old_text, new_text, tuple(lines)))
    return changes


def current_state(tool_pk: int) -> dict[str, Any] | None:
    state = Tool.snapshots([tool_pk], router.db_for_read(Tool)).get(tool_pk)
    return None if state is None else state[2]


def _recreated(old: ToolRevision) -> Tool:
    """A deleted tool back under its old id, one version past its last revision."""
    tool = Tool(pk=old.tool_pk)
    last = ToolRevision.objects.filter(tool_pk=old.tool_pk).exclude(version=None).first()
    tool.version = (last.version or 0) + 1 if last is not None else 1
    return tool


def _existing_scopes(wanted: list[str]) -> list[Scope]:
    """The scopes of those names; ValidationError when one no longer exists."""
    scopes = list(Scope.objects.filter(name__in=wanted))
    missing = sorted(set(wanted) - {s.name for s in scopes})
    if missing:
        raise ValidationError({"required_scopes": [f"Scope {name!r} no longer exists." for name in missing]})
    return scopes


def restore(old: ToolRevision, *, user: Any = None) -> Tool:
    """Bring the tool back to ``old``'s state as a new revision (re-creating a deleted tool
    under its old id). Raises ValidationError when that state is not valid any more (a
    handler no longer registered, a name taken since, a scope deleted)."""
    data = dict(old.data)
    using = router.db_for_write(Tool)
    comment = f"Restored revision #{old.pk} (version {old.version})"
    with transaction.atomic(using=using), revision(user=user, source="restore", comment=comment) as frame:
        tool = Tool.objects.select_for_update().filter(pk=old.tool_pk).first()
        recreate = tool is None
        if tool is None:
            tool = _recreated(old)
        for name in EDITABLE_FIELDS:
            if name in data and name != "required_scopes":
                setattr(tool, name, data[name])
        scopes = _existing_scopes(data.get("required_scopes", []))
        tool.full_clean()
        if user is not None and getattr(user, "is_authenticated", False):
            tool.updated_by = user
        tool.save(force_insert=recreate)
        tool.required_scopes.set(scopes)
        frame.touched[tool.pk] = RevisionAction.RESTORED
    return tool
