"""Tool rows from the registered toolsets, created or updated idempotently.

A row is found by what it is bound to (tool kind and toolset), not by its name, so an
admin may rename it. The code owns the binding, the schemas (derived by the kind when the row
is cleaned), the annotations and a floor of required scopes; the name, title, description,
enabled flag, rate limit and task support are written when the row is created and then left to
the admin (``reset=True`` writes them again). Running it twice changes nothing the second time:
a row is saved (and its version moved) only when something differs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.db import transaction

from ...models import EDITABLE_FIELDS, Scope, Tool
from .compiled import compiled_for
from .handlers import ACTION_KIND, KIND_PREFIX, kind_key
from .models import ToolsetDefinition
from .site import all_toolsets, forget, remember
from .toolsets import OPERATIONS, ModelToolset
from .words import enumerate_words, indefinite

__all__ = [
    "description",
    "stale_rows",
    "sync_definition",
    "sync_toolsets",
]

# The kinds whose rows a toolset owns (not drf.view: its rows belong to no toolset).
TOOLSET_KINDS = (*(kind_key(operation) for operation in OPERATIONS), ACTION_KIND)

# (readOnly, destructive, idempotent) per operation; none of them reaches outside the database.
HINTS: dict[str, tuple[bool, bool, bool]] = {
    "list": (True, False, True),
    "get": (True, False, True),
    "aggregate": (True, False, True),
    "create": (False, False, False),
    "update": (False, False, True),
    "delete": (False, True, True),
}
OWNED = (
    "handler_key",
    "handler_config",
    "read_only_hint",
    "destructive_hint",
    "idempotent_hint",
    "open_world_hint",
    "ui_template_name",
)
ADMIN_EDITABLE = ("name", "title", "description", "annotation_title", "enabled", "rate_limit", "task_support")


def title(toolset: ModelToolset, operation: str) -> str:
    if operation in toolset.titles:
        return toolset.titles[operation]
    one, many = str(toolset.opts.verbose_name), str(toolset.opts.verbose_name_plural)
    return {
        "list": f"List {many}",
        "get": f"Get {indefinite(one)}",
        "create": f"Create {indefinite(one)}",
        "update": f"Update {indefinite(one)}",
        "delete": f"Delete {indefinite(one)}",
        "aggregate": f"Aggregate {many}",
    }[operation]


def description(toolset: ModelToolset, operation: str) -> str:
    if operation in toolset.descriptions:
        return toolset.descriptions[operation]
    one, many = str(toolset.opts.verbose_name), str(toolset.opts.verbose_name_plural)
    by = toolset.lookup_argument
    parts: list[str] = []
    if operation == "list":
        parts.extend(_list_description(toolset, many, by))
    elif operation == "get":
        parts.append(f"Fetch one {one} by its {by}.")
    elif operation == "create":
        parts.append(
            f"Create {indefinite(one)}. Invalid fields come back as errors keyed by field, and nothing is saved."
        )
    elif operation == "update":
        parts.append(f"Change some fields of one {one}, named by its {by}; the other fields keep their values.")
    elif operation == "delete":
        parts.append(f"Delete one {one}, named by its {by}. This cannot be undone.")
    else:
        metrics = ", ".join(f"{'/'.join(functions)} of {name}" for name, functions in toolset.aggregates.items())
        parts.append(f"Count {many}{f' and compute {metrics}' if metrics else ''}, with the same filters as the list.")
        if toolset.groups:
            parts.append(f"Group by: {', '.join(toolset.groups)}.")
    return " ".join(parts)


def _list_description(toolset: ModelToolset, many: str, by: str) -> list[str]:
    order = ", ".join(toolset.ordering) or by
    size, most = toolset.page_size, toolset.max_page_size
    parts = [f"List the {many} you may see, {size} per page (limit up to {most}), by {order}."]
    if toolset.filters:
        parts.append(f"Filter on: {', '.join(toolset.filters)}.")
    if toolset.search_paths:
        parts.append(f"Search in: {', '.join(toolset.search_paths)}.")
    if toolset.orderings:
        parts.append(f"Order by: {', '.join(toolset.orderings)}.")
    parts.append("Pass next_cursor back as cursor for the next page.")
    return parts


def row_values(toolset: ModelToolset, operation: str) -> dict[str, Any]:
    read_only, destructive, idempotent = HINTS[operation]
    name_title = title(toolset, operation)
    return {
        "name": toolset.tool_name(operation),
        "title": name_title,
        "description": description(toolset, operation),
        "annotation_title": name_title,
        "enabled": True,
        "rate_limit": toolset.rate_limit,
        "task_support": toolset.task_support.get(operation, "forbidden"),
        "handler_key": kind_key(operation),
        "handler_config": {"toolset": toolset.key, **({"revision": toolset.revision} if toolset.revision else {})},
        "read_only_hint": read_only,
        "destructive_hint": destructive,
        "idempotent_hint": idempotent,
        "open_world_hint": False,
        "ui_template_name": toolset.ui_template_name(operation),
        # The generated list and form views call their own tool again (a page, a save).
        "ui_tools": [toolset.tool_name(operation)] if toolset.ui_template_name(operation) in SELF_CALLING else [],
    }


# The generated views that call their own tool through the host (the detail view calls none).
SELF_CALLING = frozenset({"mcp_tools/drf/ui/list.html", "mcp_tools/drf/ui/form.html"})


def action_row_values(toolset: ModelToolset, name: str) -> dict[str, Any]:
    """An admin action's row: changes rows (destructive when declared so), not idempotent."""
    action = compiled_for(toolset.key, toolset.revision or None).actions[name]
    many = str(toolset.opts.verbose_name_plural)
    text = toolset.descriptions.get(name) or (
        f"{action.description}: the admin action {name!r} on the {many} named by ids "
        f"(at most {toolset.max_action_ids}). What it tells the user comes back as text."
        + (" This cannot be undone." if action.destructive else "")
    )
    name_title = toolset.titles.get(name) or action.description
    return {
        "name": toolset.action_tool_name(name),
        "title": name_title,
        "description": text,
        "annotation_title": name_title,
        "enabled": True,
        "rate_limit": toolset.rate_limit,
        "task_support": toolset.task_support.get(name, "forbidden"),
        "handler_key": ACTION_KIND,
        "handler_config": {
            "toolset": toolset.key,
            "action": name,
            **({"revision": toolset.revision} if toolset.revision else {}),
        },
        "read_only_hint": False,
        "destructive_hint": action.destructive,
        "idempotent_hint": False,
        "open_world_hint": False,
        "ui_template_name": "",
        "ui_tools": [],
    }


def _wanted_rows(toolset: ModelToolset) -> list[tuple[dict[str, Any], list[str]]]:
    """(row values, required scopes) of every tool the toolset declares."""
    rows = [(row_values(toolset, op), toolset.get_required_scopes(op)) for op in toolset.operations]
    rows += [(action_row_values(toolset, name), toolset.get_required_scopes(name)) for name in toolset.actions]
    return rows


def _binding(values: dict[str, Any]) -> tuple[str, Any, Any]:
    config = values["handler_config"] if isinstance(values["handler_config"], dict) else {}
    return (values["handler_key"], config.get("toolset"), config.get("action"))


@dataclass
class Report:
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    disabled: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    invalid: list[str] = field(default_factory=list)

    def summary(self) -> str:
        return ", ".join(f"{len(v)} {k}" for k, v in vars(self).items())


def _snapshot(tool: Tool) -> dict[str, Any]:
    return {name: getattr(tool, name) for name in EDITABLE_FIELDS if name != "required_scopes"}


def _existing(key: str | None = None) -> dict[tuple[str, Any, Any], Tool]:
    """The model tool rows by (tool kind, toolset key, action): all, or those of one toolset."""
    rows = Tool.objects.filter(handler_key__in=TOOLSET_KINDS).prefetch_related("required_scopes")
    found: dict[tuple[str, Any, Any], Tool] = {}
    for tool in rows:
        binding = _binding({"handler_key": tool.handler_key, "handler_config": tool.handler_config})
        if key is None or binding[1] == key:
            found[binding] = tool
    return found


def _sync_one(
    toolset: ModelToolset,
    existing: dict[tuple[str, Any, Any], Tool],
    report: Report,
    scopes: dict[str, Scope],
    *,
    reset: bool,
    enable: bool = False,
) -> None:
    for values, required in _wanted_rows(toolset):
        tool = existing.pop(_binding(values), None)
        if tool is None:
            tool = Tool(**values)
            tool.full_clean()
            tool.save()
            report.created.append(tool.name)
            changed = True
        else:
            before = _snapshot(tool)
            for name in OWNED + (ADMIN_EDITABLE if reset else ()) + (("enabled",) if enable else ()):
                setattr(tool, name, values[name])
            if tool.ui_template:
                tool.ui_template_name = ""  # a view written in the admin replaces the generated one
            else:  # the generated view's calls, under the row's name (an admin may rename it)
                tool.ui_tools = [tool.name] if values["ui_tools"] else []
            tool.full_clean()  # the kind derives the schemas again
            changed = _snapshot(tool) != before
            if changed:
                tool.save()
        wanted = {_scope(scopes, name, toolset) for name in required}
        held = set(tool.required_scopes.all())
        if reset and held != wanted:
            tool.required_scopes.set(wanted)
            changed = True
        elif not wanted <= held:
            tool.required_scopes.add(*(wanted - held))  # the declared scopes are a floor
            changed = True
        if tool.name not in report.created:
            (report.updated if changed else report.unchanged).append(tool.name)
    if toolset.write_implies_read:
        _write_implies_read(toolset, scopes)


READING = ("list", "get", "aggregate")


def _write_implies_read(toolset: ModelToolset, cache: dict[str, Scope]) -> None:
    """Each scope of a writing tool implies the scopes of the reading ones (a floor, as the
    required scopes: implications an admin added stay, none is removed)."""
    names = list(toolset.operations) + list(toolset.actions)
    read = {s for op in names if op in READING for s in toolset.get_required_scopes(op)}
    write = {s for op in names if op not in READING for s in toolset.get_required_scopes(op)} - read
    if not read or not write:
        return
    for name in sorted(write):
        scope = _scope(cache, name, toolset)
        missing = {_scope(cache, r, toolset) for r in read} - set(scope.implies.all())
        if missing:
            scope.implies.add(*missing)


def _retire(leftovers: dict[tuple[str, Any, Any], Tool], report: Report, prune: bool) -> None:
    """Rows of operations or toolsets no longer declared: disabled, or deleted with ``prune``."""
    for tool in leftovers.values():
        if prune:
            tool.delete()
            report.deleted.append(tool.name)
        elif tool.enabled:
            tool.enabled = False
            tool.save()
            report.disabled.append(tool.name)


def sync_toolsets(*, reset: bool = False, prune: bool = False) -> Report:
    """Write the tool rows of every registered toolset and every enabled toolset defined in the
    admin (one transaction; list_changed once)."""
    report = Report()
    with transaction.atomic():
        before = scope_texts()
        existing = _existing()
        scopes: dict[str, Scope] = {}
        for toolset in all_toolsets():
            _sync_one(toolset, existing, report, scopes, reset=reset)
        for definition in ToolsetDefinition.objects.filter(enabled=True):
            try:
                toolset = definition.as_toolset()
            except ImproperlyConfigured as exc:  # e.g. its model or a field is gone: its rows retire
                report.invalid.append(f"{definition.name}: {exc}")
                continue
            remember(toolset)
            _sync_one(toolset, existing, report, scopes, reset=reset)
        _retire(existing, report, prune)
        describe_scopes(before)
    return report


def sync_definition(definition: ToolsetDefinition) -> Report:
    """Write the rows of one toolset defined in the admin (its save and delete call this)."""
    report = Report()
    with transaction.atomic():
        before = scope_texts()
        existing = _existing(definition.key)
        if definition.enabled and definition.pk is not None:
            toolset = definition.as_toolset()
            remember(toolset)
            # The definition's enabled flag governs its rows (turning it back on enables them).
            _sync_one(toolset, existing, report, {}, reset=False, enable=True)
        else:
            forget(definition.key)
        _retire(existing, report, prune=definition.pk is None)
        describe_scopes(before)
    return report


def _scope(cache: dict[str, Scope], name: str, toolset: ModelToolset) -> Scope:
    if name not in cache:
        # Described once every row is written (``describe_scopes``): what all its tools do.
        cache[name], _ = Scope.objects.get_or_create(name=name)
    return cache[name]


# What each operation does to its model's rows, in the words of a scope's description.
VERBS = {"list": "read", "get": "read", "aggregate": "read", "create": "create", "update": "change", "delete": "delete"}
ACTION_VERB = "run admin actions on"
VERB_ORDER = ("read", "create", "change", "delete", ACTION_VERB)
# The description this module wrote before it named every model a scope guards.
LEGACY_DESCRIPTION = "Model tools of "


def scope_texts() -> dict[str, str]:
    """For each scope some model tool requires: what those tools do, in words a consent page
    shows ("Read customers and invoices; create and change invoices"). Every model tool row
    counts, enabled or not: a description may say more than a token reaches, never less."""
    guarded: dict[str, dict[str, set[str]]] = {}  # scope -> models (plural) -> verbs
    for tool in Tool.objects.filter(handler_key__in=TOOLSET_KINDS).prefetch_related("required_scopes"):
        config = tool.handler_config if isinstance(tool.handler_config, dict) else {}
        try:
            plural = str(compiled_for(config.get("toolset"), config.get("revision")).toolset.opts.verbose_name_plural)
        except ValueError:
            continue  # a toolset not registered here: stale_rows reports it
        verb = ACTION_VERB if tool.handler_key == ACTION_KIND else VERBS[tool.handler_key[len(KIND_PREFIX) :]]
        for scope in tool.required_scopes.all():
            guarded.setdefault(scope.name, {}).setdefault(plural, set()).add(verb)
    return {name: _describe(models) for name, models in guarded.items()}


def _describe(models: dict[str, set[str]]) -> str:
    groups: dict[tuple[str, ...], list[str]] = {}
    for plural, verbs in models.items():
        groups.setdefault(tuple(v for v in VERB_ORDER if v in verbs), []).append(plural)
    parts = [
        f"{enumerate_words(verbs)} {enumerate_words(sorted(plurals))}"
        for verbs, plurals in sorted(groups.items(), key=lambda item: [VERB_ORDER.index(v) for v in item[0]])
    ]
    text = "; ".join(parts)
    return text[:1].upper() + text[1:]


def describe_scopes(before: dict[str, str]) -> None:
    """Write ``scope_texts()`` into the scopes whose description is still the one this module
    wrote (``before``: the texts before the rows changed), empty, or of the old form; a
    description an admin wrote stays."""
    texts = scope_texts()
    for scope in Scope.objects.filter(name__in=list(texts)):
        text = texts[scope.name][: Scope._meta.get_field("description").max_length or None]
        ours = scope.description in ("", before.get(scope.name)) or scope.description.startswith(LEGACY_DESCRIPTION)
        if ours and scope.description != text:
            scope.description = text
            scope.save()


def stale_rows() -> list[str]:
    """Names of enabled model tools whose stored schemas differ from what their toolset derives
    now, and toolset operations with no row (``mcp_sync_toolsets`` fixes both)."""
    problems: list[str] = []
    seen: set[tuple[str, Any, Any]] = set()
    for tool in Tool.objects.enabled().filter(handler_key__in=TOOLSET_KINDS):
        binding = _binding({"handler_key": tool.handler_key, "handler_config": tool.handler_config})
        seen.add(binding)
        config = tool.handler_config if isinstance(tool.handler_config, dict) else {}
        operation = tool.handler_key[len(KIND_PREFIX) :]
        try:
            compiled = compiled_for(config.get("toolset"), config.get("revision"))
        except ValueError:
            problems.append(f"{tool.name} (toolset {config.get('toolset')!r} is not registered)")
            continue
        if tool.handler_key == ACTION_KIND:
            derived = compiled.action_schemas.get(str(config.get("action")))
            gone = f"action {config.get('action')!r} is no longer declared"
        else:
            derived = compiled.schemas.get(operation)
            gone = f"operation {operation!r} is no longer declared"
        if derived is None:
            problems.append(f"{tool.name} ({gone})")
        elif (tool.input_schema, tool.output_schema) != derived:
            problems.append(f"{tool.name} (schemas out of date)")
    for toolset in all_toolsets():
        try:
            wanted = _wanted_rows(toolset)
        except ValueError as exc:
            problems.append(f"{toolset.key} ({exc})")
            continue
        for values, _ in wanted:
            if _binding(values) not in seen:
                problems.append(f"{values['name']} (no tool row yet)")
    return problems
