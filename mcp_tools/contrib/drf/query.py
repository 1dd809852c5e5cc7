"""Querying on a caller's behalf: allowlisted filters, search and ordering, keyset cursors,
aggregates, and a per-query timeout the database enforces.

Nothing a caller sends becomes a field name, a lookup or an expression unless it is a key of
the toolset's allowlists: a name outside them (``owner__password``, an annotation, ``pk__in``
with a thousand values) is refused with a ``ToolError`` that names what is allowed.
"""

from __future__ import annotations

import contextlib
import datetime
import decimal
import hashlib
import time
import uuid
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

import orjson
from django.core import signing
from django.core.exceptions import ValidationError
from django.db import OperationalError, connections, models, transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.duration import duration_iso_string

from ...exceptions import ToolError
from ...storable import lookable
from .toolsets import stored

if TYPE_CHECKING:
    from ...types import Principal
    from .toolsets import ModelToolset

__all__ = [
    "after",
    "aggregate_expressions",
    "apply_filters",
    "apply_search",
    "decode_cursor",
    "encode_cursor",
    "guarded",
    "jsonable",
    "metric_alias",
    "order_expressions",
    "ordering_spec",
    "python_value",
    "query_hash",
    "requested_metrics",
]

CURSOR_SALT = "mcp_tools.contrib.drf.cursor"
RANGE_OPERATORS = ("lt", "lte", "gt", "gte")


def _allowed(names: Any) -> str:
    return ", ".join(sorted(names)) or "none"


# --------------------------------------------------------------------------- values


def python_value(field: models.Field[Any, Any], value: Any, where: str) -> Any:
    """A JSON value as ``field`` stores it (ids for relations), or a ToolError saying why not."""
    if field.is_relation:
        related: Any = field
        field = related.related_model._meta.pk if field.many_to_many else related.target_field
    field = stored(field)
    if isinstance(value, dict | list):
        raise ToolError(f"{where}: expected a single value, not {type(value).__name__}")
    _no_nul(value, where)
    try:
        converted = field.to_python(value)
    except ValidationError as exc:
        raise ToolError(f"{where}: {' '.join(exc.messages)}") from None
    if isinstance(converted, datetime.datetime) and timezone.is_naive(converted):
        converted = timezone.make_aware(converted)
    return converted


def _no_nul(value: Any, where: str) -> None:
    """Refuse NUL in a string compared with a column, as DRF's fields refuse it in one written
    (PostgreSQL refuses it in any query: the tool failed unexpectedly there)."""
    if isinstance(value, str) and not lookable(value):
        raise ToolError(f"{where}: null characters (U+0000) are not allowed")


def json_default(value: Any) -> Any:
    """orjson's fallback: what DRF would write for the types orjson does not know."""
    if isinstance(value, decimal.Decimal):
        return format(value, "f")
    if isinstance(value, datetime.timedelta):
        return duration_iso_string(value)
    if isinstance(value, bytes | memoryview):
        import base64

        return base64.b64encode(bytes(value)).decode("ascii")
    raise TypeError(f"not JSON: {type(value).__name__}")


def jsonable(data: Any) -> Any:
    """``data`` as the client will read it (plain dicts, lists, strings and numbers)."""
    return orjson.loads(orjson.dumps(data, default=json_default))


# --------------------------------------------------------------------------- filters and search


def apply_filters(toolset: ModelToolset, queryset: models.QuerySet[Any], filters: Any) -> models.QuerySet[Any]:
    """``{"field": {"operator": value}}`` on allowlisted fields and operators only."""
    if not filters:
        return queryset
    if not isinstance(filters, Mapping):
        raise ToolError("filter must be an object of {field: {operator: value}}")
    allowed = toolset.filters
    count = 0
    for name, conditions in filters.items():
        operators = allowed.get(name)
        if operators is None:
            raise ToolError(f"Filtering on {name!r} is not allowed; filterable fields: {_allowed(allowed)}.")
        if not isinstance(conditions, Mapping) or not conditions:
            raise ToolError(f"filter.{name} must be an object of {{operator: value}} ({', '.join(operators)})")
        field = toolset.model_field(name)
        for operator, value in conditions.items():
            count += 1
            if count > toolset.max_filters:
                raise ToolError(f"Too many filter conditions; at most {toolset.max_filters}.")
            if operator not in operators:
                raise ToolError(
                    f"filter.{name}: operator {operator!r} is not allowed; use one of: {', '.join(operators)}."
                )
            queryset = queryset.filter(_condition(toolset, field, name, operator, value))
    return queryset


def _condition(toolset: ModelToolset, field: models.Field[Any, Any], name: str, operator: str, value: Any) -> Q:
    where = f"filter.{name}.{operator}"
    if operator == "isnull":
        if not isinstance(value, bool):
            raise ToolError(f"{where}: expected true or false")
        return Q(**{f"{name}__isnull": value})
    if operator in ("in", "range"):
        if not isinstance(value, list):
            raise ToolError(f"{where}: expected a list")
        if operator == "range" and len(value) != 2:
            raise ToolError(f"{where}: expected [low, high]")
        if operator == "in" and not 1 <= len(value) <= toolset.max_in:
            raise ToolError(f"{where}: expected 1 to {toolset.max_in} values, got {len(value)}")
        values = [python_value(field, v, f"{where}[{i}]") for i, v in enumerate(value)]
    elif operator in ("contains", "icontains", "startswith"):
        if not isinstance(value, str) or not value or len(value) > toolset.max_search_length:
            raise ToolError(f"{where}: expected a string of 1 to {toolset.max_search_length} characters")
        _no_nul(value, where)
        values = [value]
    else:
        values = [python_value(field, value, where)]
    if field.many_to_many:
        # Rows with that related id (or any of them), without duplicating rows: a subquery.
        related = toolset.model._default_manager.filter(**{f"{name}__in": values}).values("pk")
        return Q(pk__in=related)
    if operator in ("in", "range"):
        return Q(**{f"{name}__{operator}": values})
    return Q(**{f"{name}__{operator}": values[0]})


def apply_search(toolset: ModelToolset, queryset: models.QuerySet[Any], text: Any) -> models.QuerySet[Any]:
    """Every word must appear (case-insensitively) in one of the declared search fields."""
    if text is None or text == "":
        return queryset
    if not toolset.search_paths:
        raise ToolError("This tool has no search; use filter instead.")
    if not isinstance(text, str) or len(text) > toolset.max_search_length:
        raise ToolError(f"search must be a string of at most {toolset.max_search_length} characters")
    _no_nul(text, "search")
    words = text.split()[:10]
    for word in words:
        match = Q()
        for path in toolset.search_paths:
            match |= Q(**{f"{path}__icontains": word})
        queryset = queryset.filter(match)
    if any("__" in path for path in toolset.search_paths):
        queryset = queryset.distinct()  # a to-many path may match one row several times
    return queryset


# --------------------------------------------------------------------------- ordering and cursors

Ordering = list[tuple[str, bool]]  # (field name, descending); the primary key comes last


def ordering_spec(toolset: ModelToolset, order_by: Any) -> Ordering:
    requested = order_by if order_by else list(toolset.ordering)
    if not isinstance(requested, list) or not all(isinstance(item, str) for item in requested):
        raise ToolError("order_by must be a list of field names, each optionally prefixed with '-'")
    if len(requested) > toolset.max_ordering:
        raise ToolError(f"order_by takes at most {toolset.max_ordering} fields")
    spec: Ordering = []
    seen = set()
    for item in requested:
        name = item[1:] if item.startswith("-") else item
        if name == "pk":
            break  # the primary key is unique: nothing after it matters
        if name not in toolset.orderings:
            raise ToolError(f"Ordering by {name!r} is not allowed; orderable fields: {_allowed(toolset.orderings)}.")
        if name not in seen:
            seen.add(name)
            spec.append((name, item.startswith("-")))
    pk_desc = any(item in ("-pk",) for item in requested)
    spec.append(("pk", pk_desc))
    return spec


def _attname(toolset: ModelToolset, name: str) -> str:
    field = toolset.model_field(name)
    return field.attname if not field.primary_key else "pk"


def order_expressions(toolset: ModelToolset, spec: Ordering) -> list[Any]:
    """ORDER BY with NULLs last in both directions, on every database (the cursor relies on it)."""
    out = []
    for name, desc in spec:
        expression = models.F(_attname(toolset, name))
        out.append(expression.desc(nulls_last=True) if desc else expression.asc(nulls_last=True))
    return out


def after(
    toolset: ModelToolset, queryset: models.QuerySet[Any], spec: Ordering, values: list[Any]
) -> models.QuerySet[Any]:
    """The rows after the row whose ordering values are ``values`` (keyset pagination).

    (a, b, pk) after (va, vb, vpk) is ``a after va`` or ``a = va and b after vb`` or ...; with
    NULLs last, nothing comes after NULL and a NULL comes after every value.
    """
    alternatives = Q(pk__in=[])  # matches nothing
    equal = Q()
    for (name, desc), value in zip(spec, values, strict=True):
        column = _attname(toolset, name)
        field = toolset.model_field(name)
        if value is not None:
            strictly = Q(**{f"{column}__{'lt' if desc else 'gt'}": value})
            if field.null:
                strictly |= Q(**{f"{column}__isnull": True})
            alternatives |= equal & strictly
            equal &= Q(**{column: value})
        else:
            equal &= Q(**{f"{column}__isnull": True})
    return queryset.filter(alternatives)


def _encode(value: Any) -> Any:
    if isinstance(value, datetime.datetime | datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, decimal.Decimal | uuid.UUID):
        return str(value)
    if isinstance(value, datetime.timedelta):
        return duration_iso_string(value)
    return value


def query_hash(*parts: Any) -> str:
    """A digest binding a cursor to the filter, search and ordering of the first page."""
    return hashlib.sha256(orjson.dumps(parts, option=orjson.OPT_SORT_KEYS, default=str)).hexdigest()[:16]


def _principal_tag(principal: Principal) -> str:
    return hashlib.sha256(principal.key.encode()).hexdigest()[:12]


def encode_cursor(toolset: ModelToolset, spec: Ordering, row: models.Model, query: str, principal: Principal) -> str:
    values = [_encode(getattr(row, _attname(toolset, name))) for name, _ in spec]
    payload = {"q": query, "p": _principal_tag(principal), "k": values}
    return signing.dumps(payload, salt=f"{CURSOR_SALT}:{toolset.key}", compress=True)


def decode_cursor(toolset: ModelToolset, spec: Ordering, cursor: Any, query: str, principal: Principal) -> list[Any]:
    """The ordering values a signed cursor carries; a ToolError for any cursor we did not issue
    for this tool, this caller and this query."""
    if not isinstance(cursor, str) or len(cursor) > 4096:
        raise ToolError("cursor must be the next_cursor string of a previous page")
    try:
        payload = signing.loads(cursor, salt=f"{CURSOR_SALT}:{toolset.key}")
    except signing.BadSignature:
        raise ToolError("Invalid cursor: pass next_cursor exactly as a previous page returned it.") from None
    if not isinstance(payload, dict) or payload.get("p") != _principal_tag(principal):
        raise ToolError("Invalid cursor: pass next_cursor exactly as a previous page returned it.")
    if payload.get("q") != query:
        raise ToolError(
            "This cursor belongs to another query: send the same filter, search and order_by as its first page."
        )
    values = payload.get("k")
    if not isinstance(values, list) or len(values) != len(spec):
        raise ToolError("Invalid cursor: pass next_cursor exactly as a previous page returned it.")
    out = []
    for (name, _), value in zip(spec, values, strict=True):
        out.append(None if value is None else python_value(toolset.model_field(name), value, "cursor"))
    return out


# --------------------------------------------------------------------------- aggregates


def metric_alias(function: str, field: str | None) -> str:
    return "count" if field is None else f"{function}_{field}"


_FUNCTIONS: dict[str, type[models.Aggregate]] = {
    "sum": models.Sum,
    "avg": models.Avg,
    "min": models.Min,
    "max": models.Max,
}


def requested_metrics(toolset: ModelToolset, arguments: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(function, field) pairs asked for, each checked against the toolset's aggregate_fields."""
    out: list[tuple[str, str]] = []
    for function in _FUNCTIONS:
        names = arguments.get(function) or []
        if not isinstance(names, list):
            raise ToolError(f"{function} must be a list of field names")
        allowed = [name for name, functions in toolset.aggregates.items() if function in functions]
        for name in names:
            if name not in allowed:
                raise ToolError(f"{function} of {name!r} is not allowed; {function} takes: {_allowed(allowed)}.")
            if (function, name) not in out:
                out.append((function, name))
    return out


def aggregate_expressions(metrics: list[tuple[str, str]]) -> dict[str, Any]:
    expressions: dict[str, Any] = {"mcp_m_count": models.Count("pk")}
    for i, (function, name) in enumerate(metrics):
        expressions[f"mcp_m{i}"] = _FUNCTIONS[function](name)
    return expressions


# --------------------------------------------------------------------------- the guard


class QueryTimeout(ToolError):
    pass


@contextlib.contextmanager
def guarded(using: str, seconds: float, *, read_only: bool = False) -> Iterator[None]:
    """One transaction whose statements the database stops after ``seconds``.

    PostgreSQL: ``statement_timeout`` set for this transaction only (``set_config(..., true)``,
    i.e. ``SET LOCAL``). SQLite: a progress handler that interrupts the running statement once
    the deadline has passed. Other databases: the transaction only.

    ``read_only``: the block only reads, so on SQLite its transaction begins ``DEFERRED``
    whatever the database's ``transaction_mode`` says (``IMMEDIATE`` would take the write lock
    for a read: reads of every process would queue behind each other and behind every write);
    a deferred transaction reads one snapshot and, in WAL mode, neither waits for a writer nor
    holds one up. PostgreSQL takes no write lock for reads in any transaction.
    """
    connection = connections[using]
    nested = connection.in_atomic_block
    try:
        with _transaction(connection, using, read_only and not nested):
            if connection.vendor == "postgresql":
                with connection.cursor() as cursor:
                    previous = None
                    if nested:  # SET LOCAL outlives a savepoint: put it back afterwards
                        cursor.execute("SELECT current_setting('statement_timeout')")
                        previous = cursor.fetchone()[0]
                    cursor.execute(
                        "SELECT set_config('statement_timeout', %s, true)", [str(max(1, int(seconds * 1000)))]
                    )
                yield
                if previous is not None:
                    with connection.cursor() as cursor:
                        cursor.execute("SELECT set_config('statement_timeout', %s, true)", [previous])
            elif connection.vendor == "sqlite":
                connection.ensure_connection()
                raw = connection.connection
                deadline = time.monotonic() + seconds
                raw.set_progress_handler(lambda: int(time.monotonic() > deadline), 1000)
                try:
                    yield
                finally:
                    raw.set_progress_handler(None, 0)
            else:
                yield
    except OperationalError as exc:
        cause = exc.__cause__
        if getattr(cause, "sqlstate", None) == "57014" or "interrupted" in str(exc):
            raise QueryTimeout(
                f"The query ran longer than {seconds:g} s and was stopped; narrow it with filters or a smaller limit."
            ) from None
        raise


@contextlib.contextmanager
def _transaction(connection: Any, using: str, deferred: bool) -> Iterator[None]:
    """``transaction.atomic``; with ``deferred`` on SQLite, begun ``DEFERRED`` (see ``guarded``)."""
    mode = None
    if deferred and connection.vendor == "sqlite":
        connection.ensure_connection()  # connecting reads transaction_mode from the settings (again)
        mode = getattr(connection, "transaction_mode", None)
    if mode is None:
        with transaction.atomic(using=using):
            yield
        return
    with contextlib.ExitStack() as stack:
        connection.transaction_mode = None  # a plain BEGIN, i.e. DEFERRED
        try:
            stack.enter_context(transaction.atomic(using=using))
        finally:
            connection.transaction_mode = mode
        yield
