"""Export tools (with the scopes they require) as JSON, and import them back: every row is
validated first with ``Tool.full_clean()`` and nothing is written if any row is invalid."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.core.exceptions import ValidationError
from django.db import router, transaction

from ..models import EDITABLE_FIELDS, SCOPE_NAME_RE, CatalogVersion, Scope, Tool, revision

FORMAT = "django-mcp-tools/tools"
FORMAT_VERSION = 1
SCOPE_FIELDS = ("name", "description", "advertised", "active", "implies")


def export_tools(tools: Iterable[Tool] | None = None) -> dict[str, Any]:
    """The tools (all when ``tools`` is None) in name order, each with its editable fields
    (``models.EDITABLE_FIELDS``, scopes by name), and every scope they need, implied ones
    included."""
    using = router.db_for_read(Tool)
    pks = [t.pk for t in tools] if tools is not None else list(Tool.objects.values_list("pk", flat=True))
    states = Tool.snapshots(pks, using)
    rows = sorted((state for state in states.values()), key=lambda s: s[0])
    needed = {name for _, _, data in rows for name in data["required_scopes"]}
    scopes = {s.name: s for s in Scope.objects.prefetch_related("implies")}
    pending = list(needed)
    while pending:  # implied scopes too, so the file is complete
        scope = scopes.get(pending.pop())
        for implied in scope.implies.all() if scope is not None else ():
            if implied.name not in needed:
                needed.add(implied.name)
                pending.append(implied.name)
    return {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "tools": [data for _, _, data in rows],
        "scopes": [
            {
                "name": s.name,
                "description": s.description,
                "advertised": s.advertised,
                "active": s.active,
                "implies": sorted(i.name for i in s.implies.all()),
            }
            for name in sorted(needed)
            if (s := scopes.get(name)) is not None
        ],
    }


def dumps(document: dict[str, Any]) -> str:
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


class ImportRejected(Exception):
    """The file was not imported; ``problems`` names each bad row and why."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__(f"{len(problems)} problem(s); nothing was imported")
        self.problems = problems


@dataclass(slots=True)
class ImportReport:
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    scopes_created: list[str] = field(default_factory=list)
    dry_run: bool = False

    def summary(self) -> str:
        what = "Would import" if self.dry_run else "Imported"
        return (
            f"{what} {len(self.created) + len(self.updated) + len(self.unchanged)} tool(s): "
            f"{len(self.created)} created, {len(self.updated)} updated, {len(self.unchanged)} unchanged; "
            f"{len(self.scopes_created)} scope(s) created."
        )


def loads(text: str | bytes) -> Any:
    """The decoded file, or ImportRejected saying where the JSON breaks."""
    try:
        return json.loads(text)
    except UnicodeDecodeError as exc:
        raise ImportRejected([f"The file is not UTF-8 text: {exc.reason}"]) from exc
    except json.JSONDecodeError as exc:
        raise ImportRejected([f"Invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"]) from exc


def import_tools(document: Any, *, user: Any = None, source: str = "import", dry_run: bool = False) -> ImportReport:
    """Create or update (by name) every tool of ``document``; tools not named are left alone.

    All rows are validated first; any problem raises ImportRejected and nothing is written.
    The writes are one transaction, one catalog version and one revision per tool.
    """
    tool_rows, scope_rows = _envelope(document)
    problems: list[str] = []
    scope_specs = _scope_specs(scope_rows, problems)
    existing_scopes = set(Scope.objects.values_list("name", flat=True))
    known_scopes = existing_scopes | set(scope_specs)
    for name, spec in scope_specs.items():
        for implied in spec["implies"]:
            if implied not in known_scopes:
                problems.append(
                    f"scope {name!r}: implies {implied!r}, which is neither in the file nor in the database"
                )
    names = [row.get("name") for row in tool_rows if isinstance(row, dict)]
    existing = Tool.objects.in_bulk([n for n in names if isinstance(n, str)], field_name="name")
    prepared: list[tuple[Tool, list[str], dict[str, Any]]] = []
    seen: set[str] = set()
    for number, row in enumerate(tool_rows, 1):
        if not isinstance(row, dict):
            problems.append(f"tool {number}: must be a JSON object")
            continue
        tool_name = row.get("name")
        label = f"tool {number} ({tool_name!r})"
        unknown = sorted(set(row) - set(EDITABLE_FIELDS))
        if unknown:
            problems.append(f"{label}: unknown field(s) {', '.join(unknown)}")
        if isinstance(tool_name, str):
            if tool_name in seen:
                problems.append(f"{label}: the name appears more than once in the file")
            seen.add(tool_name)
        scopes = row.get("required_scopes", [])
        if not isinstance(scopes, list) or not all(isinstance(s, str) for s in scopes):
            problems.append(f"{label}: required_scopes must be a list of scope names")
            scopes = []
        for scope in scopes:
            if scope not in known_scopes:
                problems.append(f"{label}: required_scopes: no scope {scope!r} in the file or the database")
        tool = existing.get(tool_name) if isinstance(tool_name, str) else None
        tool = tool if tool is not None else Tool()
        for key in EDITABLE_FIELDS:
            if key in row and key != "required_scopes":
                setattr(tool, key, row[key])
        try:
            tool.full_clean()
        except ValidationError as exc:
            problems.extend(_messages(label, exc))
        prepared.append((tool, sorted(set(scopes)), row))
    if problems:
        raise ImportRejected(problems)
    return _write(prepared, scope_specs, existing_scopes, user=user, source=source, dry_run=dry_run)


def _envelope(document: Any) -> tuple[list[Any], list[Any]]:
    if not isinstance(document, dict):
        raise ImportRejected(["The file must be a JSON object with a list of tools (as mcp_export writes it)"])
    if document.get("format") != FORMAT:
        raise ImportRejected([f"Not a tools export: format must be {FORMAT!r}"])
    if document.get("version") != FORMAT_VERSION:
        raise ImportRejected([f"Unsupported export version {document.get('version')!r}; this site reads 1"])
    tools, scopes = document.get("tools"), document.get("scopes", [])
    if not isinstance(tools, list) or not isinstance(scopes, list):
        raise ImportRejected(['"tools" and "scopes" must be lists'])
    return tools, scopes


def _scope_specs(rows: list[Any], problems: list[str]) -> dict[str, dict[str, Any]]:
    specs: dict[str, dict[str, Any]] = {}
    for number, row in enumerate(rows, 1):
        name = row.get("name") if isinstance(row, dict) else None
        label = f"scope {number} ({name!r})"
        if not isinstance(row, dict) or not isinstance(name, str) or not SCOPE_NAME_RE.match(name):
            problems.append(f"{label}: needs a name of visible ASCII without spaces, quotes or backslashes")
            continue
        unknown = sorted(set(row) - set(SCOPE_FIELDS))
        if unknown:
            problems.append(f"{label}: unknown field(s) {', '.join(unknown)}")
        implies = row.get("implies", [])
        if not isinstance(implies, list) or not all(isinstance(i, str) for i in implies):
            problems.append(f"{label}: implies must be a list of scope names")
            implies = []
        description = row.get("description", "")
        if not isinstance(description, str) or len(description) > 300:
            problems.append(f"{label}: description must be text of at most 300 characters")
            description = ""
        flags = {key: row.get(key, True) for key in ("advertised", "active")}
        for key, value in flags.items():
            if not isinstance(value, bool):
                problems.append(f"{label}: {key} must be true or false")
        specs[name] = {"description": description, "implies": implies, **flags}
    return specs


def _messages(label: str, exc: ValidationError) -> list[str]:
    if hasattr(exc, "error_dict"):
        return [f"{label}: {key}: {message}" for key, messages in exc.message_dict.items() for message in messages]
    return [f"{label}: {message}" for message in exc.messages]


def _write(
    prepared: list[tuple[Tool, list[str], dict[str, Any]]],
    scope_specs: dict[str, dict[str, Any]],
    existing_scopes: set[str],
    *,
    user: Any,
    source: str,
    dry_run: bool,
) -> ImportReport:
    report = ImportReport(dry_run=dry_run)
    using = router.db_for_write(Tool)
    comment = "Imported" if not dry_run else "Import (dry run)"
    with transaction.atomic(using=using):
        with CatalogVersion.batch(), revision(user=user, source=source, comment=comment):
            # Scopes the database lacks are created as the file describes them; existing ones stay.
            created_scopes = {
                name: Scope.objects.create(
                    name=name, description=spec["description"], advertised=spec["advertised"], active=spec["active"]
                )
                for name, spec in scope_specs.items()
                if name not in existing_scopes
            }
            by_name = {s.name: s for s in Scope.objects.all()}
            for name, scope in created_scopes.items():
                scope.implies.set([by_name[i] for i in scope_specs[name]["implies"]])
            report.scopes_created = sorted(created_scopes)
            before = Tool.snapshots([t.pk for t, _, _ in prepared if t.pk is not None], using)
            for tool, scopes, row in prepared:
                state = before.get(tool.pk) if tool.pk is not None else None
                old = state[2] if state is not None else None
                wanted = {**(old or {}), **{k: v for k, v in row.items() if k != "required_scopes"}}
                wanted["required_scopes"] = (
                    scopes if "required_scopes" in row else (old or {}).get("required_scopes", [])
                )
                if old is not None and old == wanted:
                    report.unchanged.append(tool.name)
                    continue
                (report.updated if old is not None else report.created).append(tool.name)
                tool.save()
                if old is None or old["required_scopes"] != wanted["required_scopes"]:
                    tool.required_scopes.set([by_name[s] for s in wanted["required_scopes"]])
        if dry_run:  # after the revision rows were written, so they roll back too
            transaction.set_rollback(True, using=using)
    return report
