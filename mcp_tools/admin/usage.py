"""The usage page of the audit trail: calls, errors, durations, callers and tasks, as inline SVG.

Every number comes from a bounded set of aggregate queries, whatever the number of audit rows:
calls and errors per tool per time bucket (one pass over the period's rows, which also gives the
top tools and the error rate), the median and 95th percentile duration of each top tool (two
``OFFSET`` queries per tool, at most ``TOP_TOOLS`` tools), the top callers (one, and one for
the usernames of those that are users), tasks by status (one, for viewers who may see tasks).
Two covering indexes serve them (``mcp_audit_usage_time``: time, tool, outcome, caller;
``mcp_audit_usage_tool``: tool, time, outcome, duration), so no query reads the table.
The charts are drawn here as SVG strings (no JavaScript, nothing from a CDN); each links to the
audit changelist filtered the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlencode

from django.db import connections
from django.db.models import Case, Count, F, IntegerField, Q, QuerySet, Value, When
from django.db.models.functions import Concat, TruncDay, TruncHour, TruncMinute
from django.utils import timezone
from django.utils.html import escape, format_html
from django.utils.safestring import SafeString, mark_safe

from ..models import AuditEvent, McpTask
from ..models.audit import AuditOutcome

__all__ = ["PERIODS", "TOP_TOOLS", "Usage", "usage"]

TOP_TOOLS = 5
TOP_CALLERS = 8
# period -> (its length, the unit its buckets start on, the bucket's length, its label)
PERIODS: dict[str, tuple[timedelta, str, timedelta, str]] = {
    "hour": (timedelta(hours=1), "minute", timedelta(minutes=1), "last hour, per minute"),
    "day": (timedelta(days=1), "hour", timedelta(hours=1), "last day, per hour"),
    "week": (timedelta(days=7), "day", timedelta(days=1), "last week, per day"),
}
TRUNC: dict[str, Any] = {"minute": TruncMinute, "hour": TruncHour, "day": TruncDay}
# The outcomes that did what the caller asked.
SUCCESS = (AuditOutcome.OK, AuditOutcome.APPROVED)
COLORS = ("#417690", "#d9822b", "#5a9e4b", "#b04a5a", "#7a5fa8", "#888888")
WIDTH, HEIGHT, PAD = 640, 180, 36


@dataclass
class Usage:
    """What the page shows: each chart's SVG and the numbers under it."""

    period: str
    since: datetime
    total: int
    errors: int
    charts: dict[str, SafeString]
    tools: list[dict[str, Any]]
    callers: list[dict[str, Any]]
    tasks: list[dict[str, Any]]


def usage(
    period: str, tool: str, caller: str, changelist: str, task_changelist: str = "", *, tasks: bool = True
) -> Usage:
    """The usage of the last ``period`` (hour, day, week), of one tool and one caller if given.

    ``caller`` is a username, or the principal key of a caller that is no user (``client:...``):
    what the top callers chart names them by. The charts link to ``changelist`` (the audit
    events) and, for tasks, ``task_changelist``; ``tasks``: the viewer may see tasks (else the
    tasks chart is empty and nothing of them is read).
    """
    length, unit, step, _label = PERIODS[period]
    now = timezone.now()
    since = now - length
    rows: QuerySet[AuditEvent] = AuditEvent.objects.filter(created_at__gte=since)
    failed = ~Q(outcome__in=SUCCESS)
    filters: dict[str, str] = {"created_at__gte": since.isoformat()}
    if tool:
        rows = rows.filter(tool_name=tool)
        filters["tool_name__exact"] = tool
    if caller:
        found, lookup = _caller_filter(caller)
        rows = rows.filter(**found)
        filters.update(lookup)

    def link(**extra: str) -> str:
        return changelist + "?" + urlencode({**filters, **extra})

    sqlite = connections[rows.db].vendor == "sqlite"
    # 1. Calls and errors per bucket per tool, in one pass over the period's rows: the top tools
    #    (their totals), their lines, and the error rate of all tools.
    buckets = _buckets(unit, since, now, step)
    counts = _Counts(len(buckets))
    bucket, position = _bucket(unit, buckets, sqlite)
    for row in (
        rows.values(bucket=bucket, tool=F("tool_name"))
        .annotate(calls=Count("id"), errors=Count("id", filter=failed)).order_by()
    ):  # fmt: skip
        counts.add(position(row["bucket"]), row["tool"], row["calls"], row["errors"])
    top = _top_tools(rows, counts, link)
    callers = _top_callers(rows, failed, link, sqlite=sqlite)
    by_status = _tasks_by_status(since, tool, task_changelist) if tasks else []
    charts = _charts(counts, buckets, link, top=top, callers=callers, by_status=by_status)
    return Usage(period, since, sum(counts.calls), sum(counts.errors), charts, top, callers, by_status)


def _charts(
    counts: _Counts,
    buckets: list[datetime],
    link: Callable[..., str],
    *,
    top: list[dict[str, Any]],
    callers: list[Any],
    by_status: list[dict[str, Any]],
) -> dict[str, SafeString]:
    return {
        "calls": _lines(
            [(t["tool_name"], [counts.per_tool[t["tool_name"]].get(i, 0) for i in range(len(buckets))]) for t in top],
            buckets,
            link(),
            "calls",
        ),
        "errors": _lines(
            [
                (
                    "error rate %",
                    [round(100 * e / c, 1) if c else 0 for c, e in zip(counts.calls, counts.errors, strict=True)],
                )
            ],
            buckets,
            link(outcome__in=",".join(o for o in AuditOutcome.values if o not in SUCCESS)),
            "%",
        ),
        "durations": _bars([(t["tool_name"], [t["p50"], t["p95"]], t["link"]) for t in top], ("p50", "p95"), "ms"),
        "callers": _bars([(_short(c["caller"]), [c["calls"]], c["link"]) for c in callers], ("calls",), ""),
        "tasks": _bars([(t["status"], [t["count"]], t["link"]) for t in by_status], ("tasks",), ""),
    }


class _Counts:
    """Calls and errors per bucket, of each tool and of all of them."""

    def __init__(self, buckets: int) -> None:
        self.per_tool: dict[str, dict[int, int]] = {}
        self.totals: dict[str, list[int]] = {}
        self.calls = [0] * buckets
        self.errors = [0] * buckets

    def add(self, index: int, name: str, calls: int, errors: int) -> None:
        self.per_tool.setdefault(name, {})[index] = calls
        sums = self.totals.setdefault(name, [0, 0])
        sums[0] += calls
        sums[1] += errors
        self.calls[index] += calls
        self.errors[index] += errors


def _top_tools(rows: QuerySet[AuditEvent], counts: _Counts, link: Callable[..., str]) -> list[dict[str, Any]]:
    """The most called tools, with their p50 and p95 durations: the row at that rank, two OFFSET
    queries each (over the index mcp_audit_usage_tool: tool, time, duration)."""
    ranked = sorted(counts.totals.items(), key=lambda item: (-item[1][0], item[0]))[:TOP_TOOLS]
    top: list[dict[str, Any]] = [{"tool_name": name, "calls": c, "errors": e} for name, (c, e) in ranked]
    for entry in top:
        ordered = (
            rows.filter(tool_name=entry["tool_name"]).order_by("duration_ms").values_list("duration_ms", flat=True)
        )
        n = entry["calls"]
        entry["p50"] = ordered[_rank(n, 0.50)]
        entry["p95"] = ordered[_rank(n, 0.95)]
        entry["link"] = link(tool_name__exact=entry["tool_name"])
    return top


def _top_callers(rows: QuerySet[AuditEvent], failed: Q, link: Callable[..., str], *, sqlite: bool) -> list[Any]:
    """The top callers. On SQLite grouped by an expression, not the bare column: without
    statistics it would walk the whole principal_key index to skip a sort, instead of the
    period's entries of the covering index (mcp_audit_usage_time)."""
    callers = list(
        rows.values(principal=Concat("principal_key", Value("")) if sqlite else F("principal_key"))
        .annotate(calls=Count("id"), errors=Count("id", filter=failed))
        .order_by("-calls", "principal")[:TOP_CALLERS]
    )  # fmt: skip
    names_of = _usernames([str(c["principal"]) for c in callers])
    for entry in callers:
        key = entry["principal_key"] = entry.pop("principal")
        name = names_of.get(key)
        # Named as the caller filter takes them: a user by username, any other caller by its key.
        entry["caller"] = name if name is not None else key
        entry["link"] = link(**({f"user__{_username_field()}": name} if name is not None else {"principal_key": key}))
    return callers


def _tasks_by_status(since: datetime, tool: str, task_changelist: str) -> list[dict[str, Any]]:
    """Tasks created in the period, by status."""
    task_rows = McpTask.objects.filter(created_at__gte=since)
    if tool:
        task_rows = task_rows.filter(tool_name=tool)
    by_status = list(task_rows.values("status").annotate(count=Count("id")).order_by("-count", "status"))
    for task in by_status:
        task_filters = {"created_at__gte": since.isoformat(), "status__exact": task["status"]}
        if tool:
            task_filters["tool_name__exact"] = tool
        task["link"] = task_changelist + "?" + urlencode(task_filters) if task_changelist else ""
    return by_status


def _username_field() -> str:
    from django.contrib.auth import get_user_model

    return str(get_user_model().USERNAME_FIELD)


def _caller_filter(caller: str) -> tuple[dict[str, Any], dict[str, str]]:
    """The rows of one caller (a username, else a principal key), and the changelist's lookup."""
    from django.contrib.auth import get_user_model

    model = get_user_model()
    field = model.USERNAME_FIELD
    pk = model._default_manager.filter(**{field: caller}).values_list("pk", flat=True).first()
    if pk is not None:
        return {"user_id": pk}, {f"user__{field}": caller}
    return {"principal_key": caller}, {"principal_key": caller}


def _usernames(keys: list[str]) -> dict[str, str]:
    """The username of each caller key that names a user (``user:<pk>``), in one query."""
    from django.contrib.auth import get_user_model
    from django.core.exceptions import ValidationError

    model = get_user_model()
    pks: dict[Any, str] = {}
    for key in keys:
        text = key.removeprefix("user:")
        if text == key or not text or "/" in text:
            continue
        try:
            pks[model._meta.pk.to_python(text)] = key
        except (ValidationError, ValueError, TypeError):
            continue
    if not pks:
        return {}
    found = model._default_manager.filter(pk__in=list(pks)).values_list("pk", model.USERNAME_FIELD)
    return {pks[pk]: str(name) for pk, name in found if pk in pks}


def _rank(n: int, q: float) -> int:
    """The 0-based rank of the q-quantile among n sorted values (nearest rank)."""
    return max(0, min(n - 1, int(q * n + 0.999999) - 1))


def _bucket(unit: str, buckets: list[datetime], sqlite: bool) -> tuple[Any, Callable[[Any], int]]:
    """The expression that puts a row in its bucket, and the bucket's index from its value.

    SQLite's ``Trunc`` is a Python function called per row (0.9 s for 100,000 rows): there the
    bucket is a CASE over the bucket boundaries computed here (in the current time zone), so the
    database only compares datetimes. Other databases truncate natively.
    """
    if sqlite:
        case = Case(
            *(When(created_at__lt=start, then=Value(i)) for i, start in enumerate(buckets[1:])),
            default=Value(len(buckets) - 1),
            output_field=IntegerField(),
        )
        return case, int
    positions = {start: i for i, start in enumerate(buckets)}
    last = len(buckets) - 1
    return TRUNC[unit]("created_at"), lambda value: positions.get(value, last)


def _buckets(unit: str, since: datetime, now: datetime, step: timedelta) -> list[datetime]:
    """The start of every bucket of the period, on whole minutes, hours or days (current time zone)."""
    tz = timezone.get_current_timezone()
    start = since.astimezone(tz)
    if unit == "minute":
        start = start.replace(second=0, microsecond=0)
    elif unit == "hour":
        start = start.replace(minute=0, second=0, microsecond=0)
    else:
        start = start.replace(hour=0, minute=0, second=0, microsecond=0)
    out = []
    while start <= now:
        out.append(start)
        start += step
    return out


def _short(text: str, size: int = 28) -> str:
    return text if len(text) <= size else text[: size - 1] + "…"


# --------------------------------------------------------------------------- SVG


def _lines(series: list[tuple[str, list[float]]], buckets: list[datetime], href: str, unit: str) -> SafeString:
    """A line chart: one polyline per series over the buckets, with a legend; links to ``href``."""
    if not series or not buckets or not any(any(values) for _, values in series):
        return _empty(href)
    top = max(max(values) for _, values in series) or 1
    inner_w, inner_h = WIDTH - 2 * PAD, HEIGHT - 2 * PAD
    step = inner_w / max(1, len(buckets) - 1)
    parts = [
        f'<line x1="{PAD}" y1="{HEIGHT - PAD}" x2="{WIDTH - PAD}" y2="{HEIGHT - PAD}" stroke="#999"/>',
        # the scale's top above the plot, left-aligned: right of a 36 px margin it was cut off
        f'<text x="{PAD}" y="{PAD - 8}" font-size="10">{_label(top, unit)}</text>',
        f'<line x1="{PAD - 3}" y1="{PAD}" x2="{PAD}" y2="{PAD}" stroke="#999"/>',
        f'<text x="{PAD - 4}" y="{HEIGHT - PAD}" text-anchor="end" font-size="10">0</text>',
        f'<text x="{PAD}" y="{HEIGHT - PAD + 14}" font-size="10">{escape(_when(buckets[0]))}</text>',
        f'<text x="{WIDTH - PAD}" y="{HEIGHT - PAD + 14}" text-anchor="end" font-size="10">'
        f"{escape(_when(buckets[-1]))}</text>",
    ]
    for i, (name, values) in enumerate(series):
        color = COLORS[i % len(COLORS)]
        points = " ".join(
            f"{PAD + j * step:.1f},{HEIGHT - PAD - inner_h * value / top:.1f}" for j, value in enumerate(values)
        )
        parts.append(
            f'<polyline fill="none" stroke="{color}" stroke-width="2" points="{points}">'
            f"<title>{escape(name)}</title></polyline>"
        )
        parts.append(
            f'<rect x="{PAD + 130 * i}" y="6" width="10" height="10" fill="{color}"/>'
            f'<text x="{PAD + 14 + 130 * i}" y="15" font-size="11">{escape(_short(name, 18))}</text>'
        )
    return _svg(parts, href)


def _bars(rows: list[tuple[str, list[float], str]], labels: tuple[str, ...], unit: str) -> SafeString:
    """Horizontal bars, one row per label (several bars a row for several values); rows link."""
    if not rows:
        return _empty("")
    top = max(max(values) for _, values, _ in rows) or 1
    row_h = 14 * len(labels) + 8
    height = 24 + row_h * len(rows)
    left, inner_w = 190, WIDTH - 190 - 70
    parts = []
    for i, label in enumerate(labels):
        color = COLORS[i % len(COLORS)]
        parts.append(f'<rect x="{left + 70 * i}" y="4" width="10" height="10" fill="{color}"/>'
                     f'<text x="{left + 14 + 70 * i}" y="13" font-size="11">{escape(label)}</text>')  # fmt: skip
    for r, (name, values, href) in enumerate(rows):
        y = 24 + r * row_h
        row = [f'<text x="{left - 6}" y="{y + 11}" text-anchor="end" font-size="11">{escape(name)}</text>']
        for i, value in enumerate(values):
            w = max(1.0, inner_w * value / top)
            color = COLORS[i % len(COLORS)]
            row.append(
                f'<rect x="{left}" y="{y + 14 * i}" width="{w:.1f}" height="12" fill="{color}">'
                f"<title>{escape(name)} {escape(labels[i])}: {escape(_num(value))} {escape(unit)}</title></rect>"
                f'<text x="{left + w + 4:.1f}" y="{y + 14 * i + 10}" font-size="10">{_label(value, unit)}</text>'
            )
        parts.append(f'<a href="{escape(href)}">{"".join(row)}</a>' if href else "".join(row))
    return mark_safe(  # noqa: S308  (every text inside is escaped above)
        f'<svg xmlns="http://www.w3.org/2000/svg" class="mcp-chart" width="{WIDTH}" height="{height}" '
        f'viewBox="0 0 {WIDTH} {height}" role="img">{"".join(parts)}</svg>'
    )


def _svg(parts: list[str], href: str) -> SafeString:
    return mark_safe(  # noqa: S308  (every text inside is escaped above)
        f'<svg xmlns="http://www.w3.org/2000/svg" class="mcp-chart" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" role="img"><a href="{escape(href)}">'
        f'<rect width="{WIDTH}" height="{HEIGHT}" fill="transparent"/>{"".join(parts)}</a></svg>'
    )


def _empty(href: str) -> SafeString:
    text = '<text x="10" y="24" font-size="12">Nothing in this period.</text>'
    return format_html(
        '<svg xmlns="http://www.w3.org/2000/svg" class="mcp-chart" width="{}" height="40" role="img">{}</svg>',
        WIDTH,
        mark_safe(text),  # noqa: S308  (a constant)
    )


def _label(value: float, unit: str) -> str:
    return escape(_num(value) + (" " + unit if unit else ""))


def _num(value: float) -> str:
    return f"{value:.0f}" if value >= 100 or value == int(value) else f"{value:.1f}"


def _when(moment: datetime) -> str:
    return timezone.localtime(moment).strftime("%Y-%m-%d %H:%M")
