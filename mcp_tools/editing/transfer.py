"""Export tools (with the scopes they require) as JSON, and import them back: every row is
validated first with ``Tool.full_clean()`` and nothing is written if any row is invalid."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import orjson
from django.core.exceptions import ValidationError
from django.db import router, transaction

from ..models import EDITABLE_FIELDS, SCOPE_NAME_RE, UI_CSP_FIELDS, CatalogVersion, Scope, Tool, revision
from ..models.tools import MAX_JSON_DEPTH
from ..protocol.jsonrpc import depth_over

__all__ = [
    "ImportRejected",
    "MAX_FILE_BYTES",
    "dumps",
    "export_tools",
    "import_tools",
    "loads",
]

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
    scopes = {s.name: s for s in Scope.objects.prefetch_related("implies")}
    needed = _with_implied({name for _, _, data in rows for name in data["required_scopes"]}, scopes)
    return {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "tools": [data for _, _, data in rows],
        "scopes": [_scope_entry(s) for name in sorted(needed) if (s := scopes.get(name)) is not None],
    }


def _with_implied(needed: set[str], scopes: dict[str, Scope]) -> set[str]:
    """``needed`` and the scopes they imply, transitively, so the file is complete."""
    pending = list(needed)
    while pending:
        scope = scopes.get(pending.pop())
        for implied in scope.implies.all() if scope is not None else ():
            if implied.name not in needed:
                needed.add(implied.name)
                pending.append(implied.name)
    return needed


def _scope_entry(scope: Scope) -> dict[str, Any]:
    return {
        "name": scope.name,
        "description": scope.description,
        "advertised": scope.advertised,
        "active": scope.active,
        "implies": sorted(i.name for i in scope.implies.all()),
    }


def dumps(document: dict[str, Any]) -> str:
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


class ImportRejected(Exception):
    """The file was not imported; ``problems`` names each bad row and why."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__(f"{len(problems)} problem(s); nothing was imported")
        # A file of huge values must not make a huge report: each problem is cut, and so is the list.
        shown = [p if len(p) <= MAX_PROBLEM_CHARS else p[:MAX_PROBLEM_CHARS] + "..." for p in problems[:MAX_PROBLEMS]]
        if len(problems) > MAX_PROBLEMS:
            shown.append(f"... and {len(problems) - MAX_PROBLEMS} more problem(s)")
        self.problems = shown


MAX_PROBLEMS = 100
MAX_PROBLEM_CHARS = 300


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


# The largest file read (bytes), and how deep it may nest: a tool's fields nest at most
# models.MAX_JSON_DEPTH levels, three below the top of the file.
MAX_FILE_BYTES = 64 * 1_048_576
MAX_FILE_DEPTH = MAX_JSON_DEPTH + 8


def loads(text: str | bytes) -> Any:
    """The decoded file, or ImportRejected saying where the JSON breaks.

    Parsed without recursion limits of Python's own (orjson refuses past 1024 levels), then
    refused past ``MAX_FILE_DEPTH`` with the tool and field that nest too deep.
    """
    if isinstance(text, str):
        try:
            text = text.encode()
        except UnicodeEncodeError as exc:
            raise ImportRejected([f"The file is not UTF-8 text: {exc.reason}"]) from exc
    if len(text) > MAX_FILE_BYTES:
        raise ImportRejected([f"The file is {len(text)} bytes; the largest import is {MAX_FILE_BYTES} bytes"])
    try:
        document = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        if isinstance(exc.__cause__, UnicodeDecodeError) or "utf-8" in exc.msg.lower():
            raise ImportRejected([f"The file is not UTF-8 text: {exc.msg}"]) from exc
        raise ImportRejected([f"Invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"]) from exc
    except RecursionError as exc:  # pragma: no cover - orjson has its own limit
        raise ImportRejected(["Invalid JSON: nested too deep"]) from exc
    if depth_over(document, MAX_FILE_DEPTH):
        raise ImportRejected(_where_too_deep(document))
    return document


def _where_too_deep(document: Any) -> list[str]:
    """Which tool and field (or scope) nest deeper than a file may."""
    found = []
    rows = document.get("tools") if isinstance(document, dict) else None
    for number, row in enumerate(rows if isinstance(rows, list) else (), 1):
        label = f"tool {number} ({_short(row.get('name'))})" if isinstance(row, dict) else f"tool {number}"
        if not isinstance(row, dict):
            if depth_over(row, MAX_JSON_DEPTH):
                found.append(f"{label}: Nested deeper than {MAX_JSON_DEPTH} levels.")
            continue
        for key, value in row.items():
            if depth_over(value, MAX_JSON_DEPTH):
                found.append(f"{label}: {_cut(key)}: Nested deeper than {MAX_JSON_DEPTH} levels.")
    return found or [f"The file nests deeper than {MAX_FILE_DEPTH} levels"]


def _cut(text: str) -> str:
    """A field name from the file, cut at 80 characters."""
    return text if len(text) <= 80 else text[:80] + "..."


def _short(value: Any) -> str:
    """A name from the file as a problem quotes it: its repr, cut at 80 characters."""
    if not isinstance(value, str):
        return repr(value) if value is None or isinstance(value, bool | int | float) else f"a {type(value).__name__}"
    return repr(value) if len(value) <= 80 else repr(value[:80]) + "..."


# The JSON type each field of a tool must have in a file (Django would turn 5 into "5").
_STRING = (str,)
FIELD_TYPES: dict[str, tuple[type, ...]] = {
    "name": _STRING,
    "title": _STRING,
    "description": _STRING,
    "input_schema": (dict,),
    "output_schema": (dict, type(None)),
    "annotation_title": _STRING,
    "read_only_hint": (bool, type(None)),
    "destructive_hint": (bool, type(None)),
    "idempotent_hint": (bool, type(None)),
    "open_world_hint": (bool, type(None)),
    "icons": (list,),
    "task_support": _STRING,
    "handler_key": _STRING,
    "handler_config": (dict,),
    "rate_limit": _STRING,
    "sensitive_arguments": (list,),
    "requires_approval": (bool,),
    "approval_timeout": (int, type(None)),
    "ui_template": _STRING,
    "ui_template_name": _STRING,
    "ui_visibility": _STRING,
    "ui_tools": (list,),
    "ui_connect_domains": (list,),
    "ui_resource_domains": (list,),
    "ui_frame_domains": (list,),
    "ui_base_uri_domains": (list,),
    "ui_permissions": (list,),
    "ui_prefers_border": (bool, type(None)),
    "ui_domain": _STRING,
    "enabled": (bool,),
    "always_listed": (bool,),
    "tags": (list,),
}
_TYPE_NAMES = {str: "a string", dict: "an object", list: "a list", bool: "true or false", int: "an integer"}


def _type_problem(key: str, value: Any) -> str | None:
    wanted = FIELD_TYPES.get(key)
    if wanted is None or (isinstance(value, wanted) and not (bool not in wanted and isinstance(value, bool))):
        return None
    names = [_TYPE_NAMES[t] for t in wanted if t is not type(None)]
    if type(None) in wanted:
        names.append("null")
    return f"must be {' or '.join(names)}, not {type(value).__name__}"


def import_tools(
    document: Any,
    *,
    user: Any = None,
    source: str = "import",
    dry_run: bool = False,
    may_set_ui_domains: bool = True,
) -> ImportReport:
    """Create or update (by name) every tool of ``document``; tools not named are left alone.

    All rows are validated first; any problem raises ImportRejected and nothing is written.
    The writes are one transaction, one catalog version and one revision per tool. Without
    ``may_set_ui_domains`` (the admin's ``set_ui_domains`` permission) a row that would change
    the origins a tool's view may reach is a problem too.
    """
    tool_rows, scope_rows = _envelope(document)
    problems: list[str] = []
    scope_specs = _scope_specs(scope_rows, problems)
    existing_scopes = set(Scope.objects.values_list("name", flat=True))
    known_scopes = existing_scopes | set(scope_specs)
    problems.extend(
        f"scope {name!r}: implies {implied!r}, which is neither in the file nor in the database"
        for name, spec in scope_specs.items()
        for implied in spec["implies"]
        if implied not in known_scopes
    )
    names = [row.get("name") for row in tool_rows if isinstance(row, dict)]
    existing = Tool.objects.in_bulk([n for n in names if isinstance(n, str)], field_name="name")
    rows = _ToolRows(existing, known_scopes, problems, may_set_ui_domains=may_set_ui_domains)
    for number, row in enumerate(tool_rows, 1):
        rows.check(number, row)
    if problems:
        raise ImportRejected(problems)
    return _write(rows.prepared, scope_specs, existing_scopes, user=user, source=source, dry_run=dry_run)


class _ToolRows:
    """The file's tools checked one by one: their problems, and the tools ready to save."""

    def __init__(
        self, existing: dict[str, Tool], known_scopes: set[str], problems: list[str], *, may_set_ui_domains: bool
    ) -> None:
        self.existing = existing
        self.known_scopes = known_scopes
        self.problems = problems
        self.may_set_ui_domains = may_set_ui_domains
        self.seen: set[str] = set()
        self.prepared: list[tuple[Tool, list[str], dict[str, Any]]] = []

    def check(self, number: int, row: Any) -> None:
        problems = self.problems
        if not isinstance(row, dict):
            problems.append(f"tool {number}: must be a JSON object")
            return
        tool_name = row.get("name")
        label = f"tool {number} ({_short(tool_name)})"
        unknown = sorted(set(row) - set(EDITABLE_FIELDS))
        if unknown:
            problems.append(f"{label}: unknown field(s) {', '.join(map(_cut, unknown))}")
        if isinstance(tool_name, str):
            if tool_name in self.seen:
                problems.append(f"{label}: the name appears more than once in the file")
            self.seen.add(tool_name)
        scopes = self._scopes(label, row)
        wrong = {key: p for key in EDITABLE_FIELDS if key in row and (p := _type_problem(key, row[key]))}
        problems.extend(f"{label}: {key}: {problem}" for key, problem in wrong.items())
        tool = self._filled(label, row, wrong)
        try:
            tool.full_clean(exclude=list(wrong))
        except ValidationError as exc:
            problems.extend(_messages(label, exc))
        self.prepared.append((tool, sorted(set(scopes)), row))

    def _scopes(self, label: str, row: dict[str, Any]) -> list[str]:
        scopes = row.get("required_scopes", [])
        if not isinstance(scopes, list) or not all(isinstance(s, str) for s in scopes):
            self.problems.append(f"{label}: required_scopes must be a list of scope names")
            scopes = []
        self.problems.extend(
            f"{label}: required_scopes: no scope {scope!r} in the file or the database"
            for scope in scopes
            if scope not in self.known_scopes
        )
        return scopes

    def _filled(self, label: str, row: dict[str, Any], wrong: dict[str, str]) -> Tool:
        """The tool of that name (or a new one) with the row's well-typed fields set."""
        tool_name = row.get("name")
        tool = self.existing.get(tool_name) if isinstance(tool_name, str) else None
        tool = tool if tool is not None else Tool()
        domains = {key: getattr(tool, key) for key in UI_CSP_FIELDS}
        for key in EDITABLE_FIELDS:
            if key in row and key != "required_scopes" and key not in wrong:
                setattr(tool, key, row[key])
        if not self.may_set_ui_domains:
            self.problems.extend(
                f"{label}: {key}: changing the origins a tool's view may reach needs the permission "
                "to set them (set_ui_domains)"
                for key, value in domains.items()
                if getattr(tool, key) != value
            )
        return tool


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
        label = f"scope {number} ({_short(name)})"
        if not isinstance(row, dict) or not isinstance(name, str) or not SCOPE_NAME_RE.match(name):
            problems.append(f"{label}: needs a name of visible ASCII without spaces, quotes or backslashes")
            continue
        specs[name] = _scope_spec(label, row, problems)
    return specs


def _scope_spec(label: str, row: dict[str, Any], problems: list[str]) -> dict[str, Any]:
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
    problems.extend(
        f"{label}: {key} must be true or false" for key, value in flags.items() if not isinstance(value, bool)
    )
    return {"description": description, "implies": implies, **flags}


def _messages(label: str, exc: ValidationError) -> list[str]:
    if hasattr(exc, "error_dict"):
        return [f"{label}: {key}: {message}" for key, messages in exc.message_dict.items() for message in messages]
    return [f"{label}: {message}" for message in exc.messages]


def _create_scopes(
    scope_specs: dict[str, dict[str, Any]], existing_scopes: set[str]
) -> tuple[dict[str, Scope], dict[str, Scope]]:
    """Scopes the database lacks, created as the file describes them (existing ones stay); and
    every scope by name."""
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
    return created_scopes, by_name


def _wanted(state: Any, row: dict[str, Any], scopes: list[str]) -> dict[str, Any]:
    """The tool's data once the row is applied to its current state (None for a new tool)."""
    old = state[2] if state is not None else None
    wanted = {**(old or {}), **{k: v for k, v in row.items() if k != "required_scopes"}}
    wanted["required_scopes"] = scopes if "required_scopes" in row else (old or {}).get("required_scopes", [])
    return wanted


def _save(
    report: ImportReport, tool: Tool, old: dict[str, Any] | None, wanted: dict[str, Any], by_name: dict[str, Scope]
) -> None:
    if old is not None and old == wanted:
        report.unchanged.append(tool.name)
        return
    (report.updated if old is not None else report.created).append(tool.name)
    tool.save()
    if old is None or old["required_scopes"] != wanted["required_scopes"]:
        tool.required_scopes.set([by_name[s] for s in wanted["required_scopes"]])


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
            created_scopes, by_name = _create_scopes(scope_specs, existing_scopes)
            report.scopes_created = sorted(created_scopes)
            before = Tool.snapshots([t.pk for t, _, _ in prepared if t.pk is not None], using)
            for tool, scopes, row in prepared:
                state = before.get(tool.pk) if tool.pk is not None else None
                _save(report, tool, state[2] if state is not None else None, _wanted(state, row, scopes), by_name)
        if dry_run:  # after the revision rows were written, so they roll back too
            transaction.set_rollback(True, using=using)
    return report
