"""The tool kinds model tools are bound to: ``drf.list``, ``drf.get``, ``drf.create``,
``drf.update``, ``drf.delete`` and ``drf.aggregate``; a row's config names its toolset.

Every call runs as the caller's user (``ctx.principal.user``): it must hold the operation's
permissions (Django's model permissions by default; the catalog hides the tool otherwise),
it reaches only the rows of ``toolset.get_queryset(principal)``, and it runs in one
transaction the database stops after ``toolset.query_timeout`` seconds. Refusals and invalid
data are ``isError`` results that say what is allowed; writes go through the serializer and
the model's own validation, and their field errors come back keyed by field.
"""

from __future__ import annotations

import decimal
import logging
from collections.abc import Callable, Mapping
from typing import Any

from django.contrib.messages.storage.base import BaseStorage
from django.db import IntegrityError, models, router
from django.db.models.deletion import ProtectedError, RestrictedError
from django.http import HttpRequest
from django.http.response import HttpResponseBase
from rest_framework import relations, serializers
from rest_framework.exceptions import ErrorDetail

from ...exceptions import ToolError
from ...registry import ToolKind, registry
from ...storable import holds_nul
from ...types import ToolContext, ToolResult, text
from . import query as q
from .actions import AdminAction
from .compiled import Compiled, compiled_for
from .site import get_toolset
from .toolsets import OPERATIONS, ModelToolset, stored

__all__ = [
    "ACTION_KIND",
    "KIND_PREFIX",
    "OPERATION_TERMS",
    "kind_key",
    "register_kinds",
]

logger = logging.getLogger("mcp_tools")

KIND_PREFIX = "drf."
CONFIG_SCHEMA = {
    "type": "object",
    "properties": {
        "toolset": {"type": "string", "minLength": 1, "description": "app_label.Class, or admin.<name>"},
        "revision": {"type": "integer", "minimum": 1, "description": "Of a toolset defined in the admin."},
    },
    "required": ["toolset"],
    "additionalProperties": False,
}


def kind_key(operation: str) -> str:
    return KIND_PREFIX + operation


class FieldErrors(Exception):
    """Invalid data for a write: ``detail`` maps each field to its messages."""

    def __init__(self, detail: Any) -> None:
        super().__init__("invalid data")
        self.detail = detail


# --------------------------------------------------------------------------- the call


def run(operation: str, ctx: ToolContext) -> Any:
    try:
        compiled = compiled_for(ctx.config.get("toolset"), ctx.config.get("revision"))
    except ValueError:
        logger.error("Tool %r names toolset %r, which is not registered", ctx.tool_name, ctx.config.get("toolset"))
        raise ToolError(f"Tool {ctx.tool_name!r} is not available right now.") from None
    toolset = compiled.toolset
    if operation not in toolset.operations:
        raise ToolError(f"Tool {ctx.tool_name!r} is not available right now.")
    _authorize(toolset, operation, ctx)
    if operation == "delete":
        _confirm_delete(compiled, ctx)
    read_only = operation in READ_OPERATIONS
    using = router.db_for_read(toolset.model) if read_only else router.db_for_write(toolset.model)
    try:
        with q.guarded(using, toolset.query_timeout, read_only=read_only):
            return OPERATION_FUNCS[operation](compiled, ctx)
    except FieldErrors as exc:
        return _field_errors(toolset, operation, exc.detail)
    except (ProtectedError, RestrictedError) as exc:
        related = sorted({str(obj._meta.verbose_name_plural) for obj in exc.args[1]}) if len(exc.args) > 1 else []
        referring = ", ".join(related) or "other rows"
        raise ToolError(f"This {toolset.opts.verbose_name} cannot be deleted: {referring} refer to it.") from None
    except IntegrityError:
        raise ToolError(f"The {toolset.opts.verbose_name} conflicts with existing data; nothing was saved.") from None


def _authorize(toolset: ModelToolset, operation: str, ctx: ToolContext) -> None:
    """Checked again on every call (task workers do not pass through the catalog)."""
    needed = toolset.get_required_permissions(operation)
    if not needed:
        return
    user = ctx.principal.user
    if user is None or not getattr(user, "is_active", False) or not user.has_perms(needed):
        raise ToolError(f"You may not {operation} {toolset.opts.verbose_name_plural}.")


CONFIRM_SCHEMA = {
    "type": "object",
    "properties": {
        "confirm": {"type": "boolean", "title": "Confirm", "description": "Check to go ahead.", "default": False}
    },
    "required": ["confirm"],
}


def confirm(toolset: ModelToolset, ctx: ToolContext, doing: str, done: str) -> None:
    """Ask the user before something destructive, as ``toolset.confirm_destructive`` says:
    returns to go ahead, raises ToolError (nothing done) otherwise. ``doing``: "delete book
    'Dune' (id 3)"; ``done``: "deleted". Called outside any transaction: on legacy revisions
    the question holds the call's thread until the user answers, never a lock."""
    mode = toolset.confirm_destructive
    if mode == "never":
        return
    if not ctx.can_elicit:
        if mode == "ask":
            return
        raise ToolError(
            f"Nothing was {done}: this toolset requires the user to confirm, and this client cannot ask "
            f"(it did not declare the elicitation capability). Ask the user, then use a client that "
            f"supports elicitation to {doing}."
        )
    # once: a replay of the retry that carried this acceptance is asked again, never obeyed.
    answer = ctx.elicit(f"Do you want to {doing}? This cannot be undone.", CONFIRM_SCHEMA, once=True)
    if answer.action != "accept" or (answer.content or {}).get("confirm") is not True:
        how = {"decline": "declined", "cancel": "cancelled"}.get(answer.action, "did not confirm")
        raise ToolError(f"Nothing was {done}: the user {how} the confirmation to {doing}.")


def _confirm_delete(compiled: Compiled, ctx: ToolContext) -> None:
    toolset = compiled.toolset
    if toolset.confirm_destructive == "never":
        return
    with q.guarded(router.db_for_read(toolset.model), toolset.query_timeout, read_only=True):
        instance = _find(compiled, ctx)  # refuses a row the caller cannot reach before asking
    value = getattr(instance, toolset.lookup.attname)
    confirm(
        toolset,
        ctx,
        f"delete the {toolset.opts.verbose_name} {str(instance)!r} ({toolset.lookup_argument} {value})",
        "deleted",
    )


def _field_errors(toolset: ModelToolset, operation: str, detail: Any) -> ToolResult:
    errors = _plain(detail)
    if not isinstance(errors, dict):
        errors = {"non_field_errors": errors if isinstance(errors, list) else [errors]}
    lines = [f"{name}: {' '.join(_flatten(messages))}" for name, messages in errors.items()]
    message = f"Invalid data, nothing was saved ({operation} {toolset.opts.verbose_name}). " + "; ".join(lines)
    return ToolResult(content=[text(message)], structured_content={"errors": errors}, is_error=True)


def _plain(detail: Any) -> Any:
    if isinstance(detail, Mapping):
        return {str(k): _plain(v) for k, v in detail.items()}
    if isinstance(detail, list | tuple):
        return [_plain(v) for v in detail]
    return str(detail)


def _flatten(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [f"{k}: {m}" for k, v in value.items() for m in _flatten(v)]
    if isinstance(value, list):
        return [m for v in value for m in _flatten(v)]
    return [str(value)]


# --------------------------------------------------------------------------- operations


def _rows(compiled: Compiled, principal: Any) -> models.QuerySet[Any]:
    toolset = compiled.toolset
    queryset = toolset.get_queryset(principal)
    if compiled.select_related:
        queryset = queryset.select_related(*compiled.select_related)
    if compiled.prefetch_related:
        queryset = queryset.prefetch_related(*compiled.prefetch_related)
    return queryset


def _represent(compiled: Compiled, instances: Any, *, many: bool = False) -> Any:
    if many and compiled.write_rows is not None:
        return q.jsonable(compiled.write_rows(instances))
    return q.jsonable(compiled.serializer_class(instances, many=many).data)


def do_list(compiled: Compiled, ctx: ToolContext) -> dict[str, Any]:
    toolset = compiled.toolset
    args = ctx.arguments
    queryset = q.apply_filters(toolset, toolset.get_queryset(ctx.principal), args.get("filter"))
    queryset = q.apply_search(toolset, queryset, args.get("search"))
    spec = q.ordering_spec(toolset, args.get("order_by"))
    limit = args.get("limit", toolset.page_size)
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= toolset.max_page_size:
        raise ToolError(f"limit must be an integer from 1 to {toolset.max_page_size}")
    digest = q.query_hash(args.get("filter"), args.get("search"), spec)
    page = queryset
    if args.get("cursor") is not None:
        page = q.after(toolset, page, spec, q.decode_cursor(toolset, spec, args["cursor"], digest, ctx.principal))
    page = page.order_by(*q.order_expressions(toolset, spec))
    if compiled.select_related:
        page = page.select_related(*compiled.select_related)
    if compiled.prefetch_related:
        page = page.prefetch_related(*compiled.prefetch_related)
    rows = list(page[: limit + 1])
    more = len(rows) > limit
    rows = rows[:limit]
    result: dict[str, Any] = {
        "items": _represent(compiled, rows, many=True),
        "next_cursor": q.encode_cursor(toolset, spec, rows[-1], digest, ctx.principal) if more else None,
    }
    if args.get("include_total"):
        result["total"] = queryset.order_by().count()
    return result


def _find(compiled: Compiled, ctx: ToolContext, *, for_update: bool = False) -> models.Model:
    toolset = compiled.toolset
    name = toolset.lookup_argument
    if name not in ctx.arguments:
        raise ToolError(f"Name the {toolset.opts.verbose_name} with {name!r}.")
    value = q.python_value(toolset.lookup, ctx.arguments[name], name)
    queryset = _rows(compiled, ctx.principal)
    if for_update:
        queryset = queryset.select_for_update(of=("self",))
    found = queryset.filter(**{toolset.lookup.attname: value}).first()
    if found is None:
        # Rows outside get_queryset answer exactly like rows that do not exist.
        raise ToolError(f"No {toolset.opts.verbose_name} with {name} {ctx.arguments[name]!r}.")
    return found  # type: ignore[no-any-return]


def do_get(compiled: Compiled, ctx: ToolContext) -> Any:
    return _represent(compiled, _find(compiled, ctx))


UNUSABLE = "This value cannot be used."


def _hide_foreign_duplicates(compiled: Compiled, serializer: Any, principal: Any, detail: Any) -> Any:
    """Uniqueness errors (code ``unique``) that the caller's own rows do not explain say only
    ``UNUSABLE``: "already exists" would tell the caller that a row it cannot reach (another
    owner's, outside ``get_queryset``) holds the value. A duplicate among the caller's own rows
    keeps the precise message (the caller can read those rows anyway). The refusal itself still
    says the value is taken: a model whose rows are per owner should make the value unique per
    owner (``UniqueConstraint(fields=["owner", ...])``)."""
    if not isinstance(detail, Mapping):
        return detail
    data = serializer.initial_data if isinstance(getattr(serializer, "initial_data", None), Mapping) else {}
    instance = getattr(serializer, "instance", None)
    out: dict[str, Any] = {}
    for name, messages in detail.items():
        if isinstance(messages, list) and any(getattr(m, "code", None) == "unique" for m in messages):
            explained = _own_duplicate(compiled, serializer, principal, instance, name=name, data=data)
            messages = [
                m if getattr(m, "code", None) != "unique" or explained else ErrorDetail(UNUSABLE, code="unusable")
                for m in messages
            ]
        out[name] = messages
    return out


def _own_duplicate(
    compiled: Compiled, serializer: Any, principal: Any, instance: Any, *, name: str, data: Mapping[str, Any]
) -> bool:
    """Whether one of the caller's own rows (``get_queryset``) holds ``data[name]``."""
    field = serializer.fields.get(name) if hasattr(serializer, "fields") else None
    source = getattr(field, "source", None)
    if field is None or not isinstance(source, str) or "." in source or source == "*" or name not in data:
        return False  # a constraint over several fields, or a computed source: never explained
    try:
        value = field.to_internal_value(data[name])
        rows = compiled.toolset.get_queryset(principal).filter(**{source: value})
        if instance is not None:
            rows = rows.exclude(pk=instance.pk)
        return bool(rows.exists())
    except Exception:  # a value the field cannot take was refused for that reason already
        return False


# What DRF's ProhibitNullCharactersValidator says.
NUL_REFUSED = "Null characters are not allowed."


def _save(compiled: Compiled, serializer: Any, save: Callable[[], models.Model], principal: Any = None) -> Any:
    if not serializer.is_valid():
        raise FieldErrors(_hide_foreign_duplicates(compiled, serializer, principal, serializer.errors))
    # DRF's CharField refuses NUL; a JSON or list field takes it, and PostgreSQL then refuses the
    # row (an unexpected failure): refused here with the field's name, in DRF's words.
    with_nul = {name: [NUL_REFUSED] for name, value in serializer.validated_data.items() if holds_nul(value)}
    if with_nul:
        raise FieldErrors(with_nul)
    try:
        instance = save()
    except serializers.ValidationError as exc:  # the model's own validation (full_clean)
        raise FieldErrors(_hide_foreign_duplicates(compiled, serializer, principal, exc.detail)) from None
    # Read back what the database holds (generated columns, defaults, precision): one query,
    # and one per to-many field. Not through get_queryset: the call just wrote this row.
    manager = compiled.toolset.model._default_manager
    saved = manager.filter(pk=instance.pk)
    if compiled.select_related:
        saved = saved.select_related(*compiled.select_related)
    if compiled.prefetch_related:
        saved = saved.prefetch_related(*compiled.prefetch_related)
    return _represent(compiled, saved.get())


def do_create(compiled: Compiled, ctx: ToolContext) -> Any:
    context = {"principal": ctx.principal}
    serializer = compiled.serializer_class(data=ctx.arguments, context=context)
    return _save(
        compiled, serializer, lambda: compiled.toolset.perform_create(serializer, ctx.principal), ctx.principal
    )


def do_update(compiled: Compiled, ctx: ToolContext) -> Any:
    instance = _find(compiled, ctx, for_update=True)
    data = ctx.arguments.get("data")
    if not isinstance(data, dict) or not data:
        raise ToolError("data must be an object with the fields to change")
    context = {"principal": ctx.principal}
    serializer = compiled.serializer_class(instance, data=data, partial=True, context=context)
    return _save(
        compiled, serializer, lambda: compiled.toolset.perform_update(serializer, ctx.principal), ctx.principal
    )


def do_delete(compiled: Compiled, ctx: ToolContext) -> dict[str, Any]:
    toolset = compiled.toolset
    instance = _find(compiled, ctx, for_update=True)
    name = toolset.lookup_argument
    value = q.jsonable(getattr(instance, toolset.lookup.attname))
    toolset.perform_destroy(instance, ctx.principal)
    return {"deleted": True, name: value}


def do_aggregate(compiled: Compiled, ctx: ToolContext) -> dict[str, Any]:
    toolset = compiled.toolset
    args = ctx.arguments
    metrics = q.requested_metrics(toolset, args)
    queryset = q.apply_filters(toolset, toolset.get_queryset(ctx.principal), args.get("filter"))
    queryset = q.apply_search(toolset, queryset, args.get("search"))
    expressions = q.aggregate_expressions(metrics)
    group_by = args.get("group_by")
    if group_by is None:
        totals = queryset.order_by().aggregate(**expressions)
        return {"group_by": None, "groups": [_group(compiled, metrics, totals)], "truncated": False}
    if group_by not in toolset.groups:
        raise ToolError(
            f"Grouping by {group_by!r} is not allowed; group_by takes: {', '.join(toolset.groups) or 'none'}."
        )
    column = toolset.model_field(group_by).attname
    ordered = models.F(column).asc(nulls_last=True)
    rows = list(queryset.values(column).annotate(**expressions).order_by(ordered)[: toolset.max_groups + 1])
    truncated = len(rows) > toolset.max_groups
    groups = []
    for row in rows[: toolset.max_groups]:
        item = {"group": _group_value(compiled, group_by, row[column])}
        item.update(_group(compiled, metrics, row))
        groups.append(item)
    return {"group_by": group_by, "groups": groups, "truncated": truncated}


def _group_value(compiled: Compiled, name: str, value: Any) -> Any:
    if value is None:
        return None
    field = compiled.fields[name]
    if isinstance(field, relations.PrimaryKeyRelatedField):
        return q.jsonable(value if field.pk_field is None else field.pk_field.to_representation(value))
    return q.jsonable(field.to_representation(value))


def _group(compiled: Compiled, metrics: list[tuple[str, str]], row: Mapping[str, Any]) -> dict[str, Any]:
    toolset = compiled.toolset
    out: dict[str, Any] = {"count": int(row["mcp_m_count"])}
    for i, (function, name) in enumerate(metrics):
        value = row[f"mcp_m{i}"]
        model_field = stored(toolset.model_field(name))
        if value is None:
            out[q.metric_alias(function, name)] = None
        elif function in ("min", "max"):
            out[q.metric_alias(function, name)] = q.jsonable(compiled.fields[name].to_representation(value))
        elif isinstance(model_field, models.DecimalField):
            number = decimal.Decimal(str(value))
            if function == "sum" and model_field.decimal_places is not None:  # as many places as the field
                number = number.quantize(decimal.Decimal(1).scaleb(-model_field.decimal_places))
            out[q.metric_alias(function, name)] = format(number, "f")
        elif function == "sum" and isinstance(model_field, models.IntegerField | models.AutoField):
            out[q.metric_alias(function, name)] = int(value)
        else:
            out[q.metric_alias(function, name)] = float(value)
    return out


OPERATION_FUNCS: dict[str, Callable[[Compiled, ToolContext], Any]] = {
    "list": do_list,
    "get": do_get,
    "create": do_create,
    "update": do_update,
    "delete": do_delete,
    "aggregate": do_aggregate,
}
# Operations that only read: their transaction takes no write lock (query.guarded(read_only=True)).
READ_OPERATIONS = frozenset({"list", "get", "aggregate"})


# --------------------------------------------------------------------------- the kinds


def _toolset_for(operation: str, config: Any) -> ModelToolset:
    if not isinstance(config, dict):
        raise ValueError("The handler config must be an object naming a toolset.")
    toolset = get_toolset(config.get("toolset"), config.get("revision"))
    if operation not in toolset.operations:
        raise ValueError(f"Toolset {toolset.key!r} does not declare the {operation!r} operation.")
    return toolset


# Words people use for each operation, beside the model's names (progressive discovery searches
# them with the tool's own text).
OPERATION_TERMS: dict[str, tuple[str, ...]] = {
    "list": ("list", "find", "search", "browse", "show", "filter"),
    "get": ("get", "fetch", "show", "read", "details", "look up"),
    "create": ("create", "add", "new", "make", "register"),
    "update": ("update", "change", "edit", "modify", "set"),
    "delete": ("delete", "remove", "destroy", "erase"),
    "aggregate": ("aggregate", "count", "how many", "total", "sum", "average", "statistics", "group"),
}


def model_terms(toolset: ModelToolset) -> tuple[str, ...]:
    """The model's names as people say them: verbose names, the model name and its app."""
    opts = toolset.opts
    return (str(opts.verbose_name), str(opts.verbose_name_plural), opts.model_name, opts.app_label)


def _make(operation: str) -> ToolKind:
    def handle(ctx: ToolContext) -> Any:
        return run(operation, ctx)

    def derive(config: Any) -> tuple[dict[str, Any], dict[str, Any] | None]:
        toolset = _toolset_for(operation, config)
        return compiled_for(toolset.key, toolset.revision or None).schemas[operation]

    def permissions(config: Any) -> list[str]:
        return _toolset_for(operation, config).get_required_permissions(operation)

    def trusted(config: Any) -> bool:
        toolset = _toolset_for(operation, config)
        return compiled_for(toolset.key, toolset.revision or None).output_exact

    def terms(config: Any) -> tuple[str, ...]:
        return (*model_terms(_toolset_for(operation, config)), *OPERATION_TERMS[operation])

    def unavailable(config: Any) -> str:
        try:
            _toolset_for(operation, config)
        except ValueError as exc:
            return str(exc)
        return ""

    handle.__name__ = handle.__qualname__ = f"drf_{operation}"
    return ToolKind(
        key=kind_key(operation),
        func=handle,
        config_schema=CONFIG_SCHEMA,
        label=f"Model toolset: {operation}",
        description=f"The {operation!r} operation of a model toolset (mcp_tools.contrib.drf).",
        schemas=derive,
        permissions=permissions,
        trusted_output=trusted,
        terms=terms,
        unavailable=unavailable,
    )


KINDS: dict[str, ToolKind] = {operation: _make(operation) for operation in OPERATIONS}


# --------------------------------------------------------------------------- admin actions

ACTION_KIND = KIND_PREFIX + "action"
ACTION_CONFIG_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "toolset": {"type": "string", "minLength": 1, "description": "app_label.Class, or admin.<name>"},
        "revision": {"type": "integer", "minimum": 1, "description": "Of a toolset defined in the admin."},
        "action": {"type": "string", "minLength": 1, "description": "The name of the ModelAdmin's action."},
    },
    "required": ["toolset", "action"],
    "additionalProperties": False,
}


class _Collected(BaseStorage):
    """A message storage for the action's request: keeps what ``message_user`` says."""

    def _get(self, *args: Any, **kwargs: Any) -> tuple[list[Any], bool]:
        return [], True

    def _store(self, messages: Any, response: Any, *args: Any, **kwargs: Any) -> list[Any]:
        return []


def admin_request(user: Any) -> HttpRequest:
    """A POST request of ``user`` for a ModelAdmin's permission checks and ``message_user``."""
    request = HttpRequest()
    request.method = "POST"
    request.user = user
    request._messages = _Collected(request)  # type: ignore[attr-defined]
    return request


class _Intermediate(Exception):
    """The action answered with a page: its transaction is rolled back."""


def _action_of(ctx: ToolContext) -> tuple[Compiled, AdminAction]:
    config = ctx.config
    try:
        compiled = compiled_for(config.get("toolset"), config.get("revision"))
    except ValueError:
        logger.error("Tool %r names toolset %r, which is not available", ctx.tool_name, config.get("toolset"))
        raise ToolError(f"Tool {ctx.tool_name!r} is not available right now.") from None
    action = compiled.actions.get(str(config.get("action")))
    if action is None:
        raise ToolError(f"Tool {ctx.tool_name!r} is not available right now.")
    return compiled, action


def _action_ids(toolset: ModelToolset, ctx: ToolContext, plural: str) -> tuple[list[Any], list[Any]]:
    """The ``ids`` argument, and the primary key values they name."""
    ids = ctx.arguments.get("ids")
    if not isinstance(ids, list) or not 1 <= len(ids) <= toolset.max_action_ids:
        raise ToolError(f"ids must be a list of 1 to {toolset.max_action_ids} {plural} ids.")
    values = [q.python_value(toolset.opts.pk, value, "ids") for value in ids]
    if len(set(values)) != len(values):
        raise ToolError("ids lists an id twice.")
    return ids, values


def _action_request(action: Any, ctx: ToolContext, plural: str) -> Any:
    """The admin request the action runs with, once the caller may run it (as the admin checks)."""
    user = ctx.principal.user
    if user is None or not getattr(user, "is_active", False):
        raise ToolError(f"The action {action.name!r} runs as a signed-in user; this call has none.")
    request = admin_request(user)
    model_admin = action.model_admin
    if not model_admin.has_view_or_change_permission(request):  # what the admin's change list needs
        raise ToolError(f"You may not run {action.name!r} on {plural}: it needs the view or change permission.")
    if action.allowed_permissions and not any(
        getattr(model_admin, f"has_{permission}_permission")(request) for permission in action.allowed_permissions
    ):
        needed = " or ".join(action.allowed_permissions)
        raise ToolError(f"You may not run {action.name!r} on {plural}: it needs the {needed} permission.")
    return request


def _messages_of(request: Any) -> list[dict[str, str]]:
    """The messages the action sent the user, with their level."""
    return [{"level": m.level_tag or "info", "message": str(m.message)} for m in request._messages]


def _first_ids(ids: list[Any]) -> str:
    return ", ".join(map(str, ids[:10])) + (f" and {len(ids) - 10} more" if len(ids) > 10 else "")


def run_action(ctx: ToolContext) -> ToolResult:
    """Run an admin action over ``ids``: the rows of ``get_queryset(principal)`` with those ids,
    as the caller (the ModelAdmin's ``allowed_permissions``), in one transaction; the messages
    it sends the user come back as text. A page (intermediate step, download) is refused."""
    compiled, action = _action_of(ctx)
    toolset = compiled.toolset
    plural = str(toolset.opts.verbose_name_plural)
    _authorize(toolset, "get", ctx)
    ids, values = _action_ids(toolset, ctx, plural)
    request = _action_request(action, ctx, plural)
    model_admin = action.model_admin
    with q.guarded(router.db_for_read(toolset.model), toolset.query_timeout, read_only=True):
        found = set(toolset.get_queryset(ctx.principal).filter(pk__in=values).values_list("pk", flat=True))
    missing = [ids[i] for i, value in enumerate(values) if value not in found]
    if missing:  # rows outside get_queryset answer like rows that do not exist
        raise ToolError(f"No {plural} with id {', '.join(map(str, missing))}; nothing was done.")
    if action.destructive:
        confirm(toolset, ctx, f"run {action.description!r} on {len(ids)} {plural} (id {_first_ids(ids)})", "done")
    try:
        with q.guarded(router.db_for_write(toolset.model), toolset.query_timeout):
            queryset = toolset.get_queryset(ctx.principal).filter(pk__in=values)
            response = action.func(model_admin, request, queryset)
            if isinstance(response, HttpResponseBase):
                raise _Intermediate
    except _Intermediate:
        raise ToolError(
            f"The action {action.name!r} answered with a page (a confirmation step or a download), which a tool "
            "cannot show; its changes were rolled back."
        ) from None
    messages = _messages_of(request)
    lines = [m["message"] for m in messages] or [f"Ran {action.description!r} on {len(ids)} {plural}."]
    return ToolResult(
        content=[text(line) for line in lines],
        structured_content={"ids": q.jsonable(values), "messages": messages},
    )


def _make_action_kind() -> ToolKind:
    def derive(config: Any) -> tuple[dict[str, Any], dict[str, Any] | None]:
        compiled = _compiled_action(config)
        return compiled.action_schemas[config["action"]]

    def permissions(config: Any) -> list[str]:
        return _compiled_action(config).toolset.get_required_permissions("get")

    def trusted(config: Any) -> bool:
        return _compiled_action(config).output_exact

    def terms(config: Any) -> tuple[str, ...]:
        compiled = _compiled_action(config)
        return (*model_terms(compiled.toolset), "action", str(compiled.actions[config["action"]].description))

    def unavailable(config: Any) -> str:
        try:
            _compiled_action(config)
        except ValueError as exc:
            return str(exc)
        return ""

    return ToolKind(
        key=ACTION_KIND,
        func=run_action,
        config_schema=ACTION_CONFIG_SCHEMA,
        label="Model toolset: admin action",
        description="An admin action of a model toolset's ModelAdmin, over a list of ids (mcp_tools.contrib.drf).",
        schemas=derive,
        permissions=permissions,
        trusted_output=trusted,
        terms=terms,
        unavailable=unavailable,
    )


def _compiled_action(config: Any) -> Compiled:
    if not isinstance(config, dict):
        raise ValueError("The handler config must be an object naming a toolset and an action.")
    toolset = get_toolset(config.get("toolset"), config.get("revision"))
    compiled = compiled_for(toolset.key, toolset.revision or None)
    if config.get("action") not in compiled.actions:
        raise ValueError(f"Toolset {toolset.key!r} does not declare the action {config.get('action')!r}.")
    return compiled


ACTION = _make_action_kind()


def register_kinds() -> None:
    """Register the six kinds and the action kind (idempotent; the app config calls it)."""
    for kind in (*KINDS.values(), ACTION):
        registry.register(kind)
