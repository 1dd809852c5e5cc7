"""OpenTelemetry traces and metrics, when ``opentelemetry-api`` is installed; no-ops otherwise.

The names follow the MCP semantic conventions (OpenTelemetry semconv, Development status):
one ``SERVER`` span per request named ``{mcp.method.name} {target}`` (``tools/call echo``),
its parent the context the client sent in ``params._meta`` (``traceparent``, ``tracestate``,
``baggage``) or else in the HTTP headers, and the histogram ``mcp.server.operation.duration``
in seconds. ``opentelemetry`` is imported once, on first use, and only once the site has
imported it (to set a tracer or meter provider, or through auto-instrumentation): until then
every hook costs one attribute check or two dictionary lookups, and a web worker does not carry
the API's modules (about 3 MB) for spans nothing would record. With the API imported but no SDK
configured, the API's no-op tracer and meter answer.
The app configures no SDK and no exporter: the site does (see docs/howto/observability.md).

What a client sends never becomes a metric series of its own, nor an unbounded attribute: a
method the server does not know is recorded as ``_OTHER`` (the conventions' fallback value),
and so is a tool the call did not find (unknown, or not visible to the caller); the span is
then named by the method alone. Every other string that came from the client (the request id,
an error's description) is cut to ``MAX_ATTRIBUTE_CHARS``. A metric's attributes are taken only
from bounded sets: the server's methods and revisions, the catalog's tool names, fixed outcomes.
"""

from __future__ import annotations

import importlib.metadata
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, nullcontext
from contextvars import ContextVar
from typing import Any

from .protocol.versions import SUPPORTED_VERSIONS

__all__ = [
    "MAX_ATTRIBUTE_CHARS",
    "OTHER",
    "call_ended",
    "inject",
    "rate_limited",
    "reload",
    "request_span",
    "stream_closed",
    "stream_opened",
    "task_span",
    "task_status",
    "tool_found",
]

# The histogram buckets the conventions recommend for mcp.*.duration (seconds).
DURATION_BUCKETS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300)
PROPAGATED = ("traceparent", "tracestate", "baggage")
_SCOPE = "mcp_tools"
# The conventions' fallback for a value outside the known set (as HTTP's ``http.request.method``).
OTHER = "_OTHER"
# A string attribute or status description that came from the client is cut to this length.
MAX_ATTRIBUTE_CHARS = 128
# A propagation field longer than this is ignored (W3C baggage allows 8,192 bytes in all).
_MAX_PROPAGATED_CHARS = 8192
# The ``mcp.method.name`` values the conventions list (a client may send any of them); the
# methods this server serves are passed in as ``known`` by the dispatcher.
WELL_KNOWN_METHODS = frozenset(
    {
        "completion/complete",
        "elicitation/create",
        "initialize",
        "logging/setLevel",
        "notifications/cancelled",
        "notifications/initialized",
        "notifications/message",
        "notifications/progress",
        "notifications/prompts/list_changed",
        "notifications/resources/list_changed",
        "notifications/resources/updated",
        "notifications/roots/list_changed",
        "notifications/tools/list_changed",
        "ping",
        "prompts/get",
        "prompts/list",
        "resources/list",
        "resources/read",
        "resources/subscribe",
        "resources/templates/list",
        "resources/unsubscribe",
        "roots/list",
        "sampling/createMessage",
        "tools/call",
        "tools/list",
    }
)
_VERSIONS = frozenset(SUPPORTED_VERSIONS)


def _cut(text: str) -> str:
    return text if len(text) <= MAX_ATTRIBUTE_CHARS else text[: MAX_ATTRIBUTE_CHARS - 1] + "…"


class _Api:
    """The OpenTelemetry API modules and this library's instruments (made once)."""

    def __init__(self) -> None:
        from opentelemetry import context, metrics, propagate, trace
        from opentelemetry.trace import SpanKind, Status, StatusCode

        self.context, self.propagate, self.trace = context, propagate, trace
        self.SpanKind, self.Status, self.StatusCode = SpanKind, Status, StatusCode
        try:
            version = importlib.metadata.version("django-mcp-tools")
        except importlib.metadata.PackageNotFoundError:
            version = ""
        self.tracer = trace.get_tracer(_SCOPE, version)
        meter = metrics.get_meter(_SCOPE, version)
        try:
            self.duration = meter.create_histogram(
                "mcp.server.operation.duration",
                unit="s",
                description="Duration of the MCP request or notification as observed on the receiver",
                explicit_bucket_boundaries_advisory=list(DURATION_BUCKETS),
            )
        except TypeError:  # an API before 1.23 has no bucket advisory
            self.duration = meter.create_histogram("mcp.server.operation.duration", unit="s")
        self.calls = meter.create_counter("mcp_tools.tool.calls", unit="{call}", description="tools/call by outcome")
        self.errors = meter.create_counter(
            "mcp_tools.tool.errors", unit="{call}", description="tools/call that did not end ok"
        )
        self.refusals = meter.create_counter(
            "mcp_tools.rate_limit.refusals", unit="{call}", description="calls refused by a rate limit"
        )
        self.tasks = meter.create_counter(
            "mcp_tools.tasks", unit="{task}", description="tasks created (working) and ended, by status"
        )
        self.streams = meter.create_up_down_counter(
            "mcp_tools.streams.open", unit="{stream}", description="open SSE streams, by kind"
        )


class _State:
    api: _Api | None = None
    loaded = False


_state = _State()


def _load() -> _Api | None:
    if "opentelemetry.trace" not in sys.modules and "opentelemetry.metrics" not in sys.modules:
        # Nothing has set a provider (that imports the API): nothing would record. Look again
        # on the next request; a provider set later is found then.
        return None
    _state.loaded = True
    try:
        _state.api = _Api()
    except ImportError:
        _state.api = None
    return _state.api


def reload() -> None:
    """Look for OpenTelemetry again on next use (tests; a site that installs it late)."""
    _state.api, _state.loaded = None, False


def _api() -> _Api | None:
    api = _state.api
    if api is None and not _state.loaded:
        return _load()
    return api


# --------------------------------------------------------------------------- requests


class RequestSpan:
    """What a request's span learns while it is served (its error, its tool)."""

    __slots__ = ("api", "attributes", "handed_over", "method", "span", "started")

    def __init__(self, api: _Api, span: Any, attributes: dict[str, Any], method: str) -> None:
        self.api, self.span, self.attributes, self.method = api, span, attributes, method
        self.started = time.perf_counter()
        self.handed_over = False

    def hand_over(self) -> None:
        """Tried on the event loop's thread and handed to a pool thread, which serves the request
        again under a span of its own: this try records no duration, and its span says so."""
        self.handed_over = True
        if self.span is not None:
            self.span.set_attribute("mcp_tools.handed_over", True)

    def failed(self, error_type: str, message: str = "") -> None:
        """error.type (the JSON-RPC code as a string, or ``tool_error``) and status ERROR."""
        self.attributes["error.type"] = error_type
        span = self.span
        if span is None:
            return
        span.set_attribute("error.type", error_type)
        if error_type.lstrip("-").isdigit():
            span.set_attribute("rpc.response.status_code", error_type)
        span.set_status(self.api.Status(self.api.StatusCode.ERROR, _cut(message) if message else None))

    def tool(self, name: str) -> None:
        """The call found its tool (a catalog name): the span is named by it, and the metrics."""
        self.attributes["gen_ai.tool.name"] = name
        span = self.span
        if span is not None:
            span.set_attribute("gen_ai.tool.name", name)
            span.update_name(f"{self.method} {name}")


_NO_SPAN: Any = nullcontext(None)
_current: ContextVar[RequestSpan | None] = ContextVar("mcp_tools_request_span", default=None)
# The audit outcomes a tools/call answers with an ``isError`` result (error.type ``tool_error``).
_TOOL_ERRORS = frozenset({"tool_error", "invalid", "rate_limited", "rejected", "expired"})


def request_span(method: str, params: Mapping[str, Any], request_id: Any, *, headers: Mapping[str, str] | None,
                 protocol_version: str, session_id: str | None, known: bool = False) -> Any:  # fmt: skip
    """A context manager around serving one request: yields a ``RequestSpan`` or None.

    ``known``: the server serves ``method`` (else it is recorded as ``_OTHER`` unless the
    conventions list it). ``protocol_version`` outside the supported revisions is ``_OTHER``.
    A ``tools/call`` names no tool until the call found it (``tool_found``).
    """
    api = _state.api
    if api is None and (_state.loaded or (api := _load()) is None):
        return _NO_SPAN
    method = method if known or method in WELL_KNOWN_METHODS else OTHER
    version = protocol_version if protocol_version in _VERSIONS else OTHER
    return _request_span(api, method, params, request_id, headers=headers, protocol_version=version,
                         session_id=session_id)  # fmt: skip


@contextmanager
def _request_span(api: _Api, method: str, params: Mapping[str, Any], request_id: Any, *,
                  headers: Mapping[str, str] | None, protocol_version: str,
                  session_id: str | None) -> Iterator[RequestSpan]:  # fmt: skip
    attributes: dict[str, Any] = {"mcp.method.name": method, "mcp.protocol.version": protocol_version}
    if method == "tools/call":
        attributes["gen_ai.operation.name"] = "execute_tool"
        # Until the call finds its tool (RequestSpan.tool): a name no tool has is no series.
        attributes["gen_ai.tool.name"] = OTHER
    span_attributes = dict(attributes)
    if request_id is not None:
        span_attributes["jsonrpc.request.id"] = _cut(str(request_id))
    if session_id:
        span_attributes["mcp.session.id"] = session_id
    if _untraced(api):
        # The API without an SDK: its spans would record nothing; skip them (metrics still count).
        with _recording(api, None, attributes, method) as recorder:
            yield recorder
        return
    parent, links = _parent(api, params, headers)
    with (
        api.tracer.start_as_current_span(
            method,
            context=parent,
            kind=api.SpanKind.SERVER,
            attributes=span_attributes,
            links=links,
            record_exception=False,
            set_status_on_exception=False,
        ) as span,
        _recording(api, span, attributes, method) as recorder,
    ):
        yield recorder


@contextmanager
def _recording(api: _Api, span: Any, attributes: dict[str, Any], method: str) -> Iterator[RequestSpan]:
    recorder = RequestSpan(api, span, attributes, method)
    token = _current.set(recorder)
    try:
        yield recorder
    finally:
        _current.reset(token)
        if not recorder.handed_over:
            api.duration.record(time.perf_counter() - recorder.started, recorder.attributes)


def _untraced(api: _Api) -> bool:
    """No tracer provider is set (the API alone): our proxy tracer's spans would record nothing.

    The API's proxy tracer reads the same module global; ``get_tracer_provider()`` would cost
    1.4 us a call (it looks at the environment each time).
    """
    provider = getattr(api.trace, "_TRACER_PROVIDER", api)
    if provider is api:  # an API that renamed its global
        return isinstance(api.trace.get_tracer_provider(), api.trace.ProxyTracerProvider)
    return provider is None


def _parent(api: _Api, params: Mapping[str, Any], headers: Mapping[str, str] | None) -> tuple[Any, list[Any]]:
    """The context of ``params._meta`` (else the HTTP headers); the HTTP one linked if both."""
    meta = params.get("_meta")
    from_meta = {k: v for k in PROPAGATED if _propagated(v := meta.get(k))} if isinstance(meta, Mapping) else {}
    from_http = {k: v for k in PROPAGATED if _propagated(v := headers.get(k))} if headers else {}
    if from_meta:
        parent = api.propagate.extract(from_meta)
        links = []
        if from_http:
            ambient = api.trace.get_current_span(api.propagate.extract(from_http)).get_span_context()
            if ambient.is_valid:
                links.append(api.trace.Link(ambient))
        return parent, links
    if from_http:
        return api.propagate.extract(from_http), []
    return None, []


def _propagated(value: Any) -> bool:
    return isinstance(value, str) and 0 < len(value) <= _MAX_PROPAGATED_CHARS


def tool_found(name: str) -> None:
    """The current tools/call found its tool (``name`` is a catalog name the caller may call)."""
    recorder = _current.get()
    if recorder is not None:
        recorder.tool(name)


def call_ended(tool_name: str | None, outcome: str, detail: str) -> None:
    """A tools/call ended (its audit row): counters, and error.type on its span when it failed.

    ``tool_name``: the tool it found, or None (an unknown or hidden tool: counted as ``_OTHER``).
    """
    api = _state.api
    if api is None:
        return
    attributes = {"gen_ai.tool.name": tool_name or OTHER, "mcp_tools.outcome": outcome}
    api.calls.add(1, attributes)
    if outcome not in ("ok", "approved", "cancelled"):
        api.errors.add(1, attributes)
    recorder = _current.get()
    if recorder is not None and outcome in _TOOL_ERRORS:
        # A JSON-RPC error raised after this (e.g. -32602) sets its own code over this one.
        recorder.failed("tool_error", detail)


def rate_limited(tool_name: str) -> None:
    api = _state.api
    if api is not None:
        api.refusals.add(1, {"gen_ai.tool.name": tool_name})


# --------------------------------------------------------------------------- tasks


def inject() -> dict[str, str]:
    """The current trace context as W3C headers, stored with a task (empty without OTel)."""
    api = _state.api
    if api is None:
        return {}
    carrier: dict[str, str] = {}
    api.propagate.inject(carrier)
    return carrier


def task_status(tool_name: str, status: str) -> None:
    api = _state.api
    if api is not None:
        api.tasks.add(1, {"gen_ai.tool.name": tool_name, "mcp_tools.task.status": status})


def task_span(task_id: str, tool_name: str, carrier: Mapping[str, Any] | None) -> Any:
    """The worker's span around a task's handler, a child of the call that created the task."""
    api = _state.api
    if api is None and (_state.loaded or (api := _load()) is None):
        return _NO_SPAN
    if _untraced(api):
        return _NO_SPAN  # no SDK: nothing would record the span
    parent = api.propagate.extract(dict(carrier)) if carrier else None
    return api.tracer.start_as_current_span(
        f"execute_tool {tool_name}",
        context=parent,
        kind=api.SpanKind.CONSUMER,
        attributes={
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": tool_name,
            "mcp_tools.task.id": task_id,
        },
    )


# --------------------------------------------------------------------------- streams


# The kinds of long-lived SSE streams the endpoint holds (``mcp_tools.stream.kind``).
STREAM_KINDS = ("get", "listen", "response", "task_result")


def stream_opened(kind: str) -> bool:
    """A long-lived SSE stream started (``STREAM_KINDS``): ``mcp_tools.streams.open`` + 1.

    Returns whether it was counted; pass that to ``stream_closed`` (a stream opened before
    OpenTelemetry was found, or without it, is not taken off the count when it closes).
    """
    api = _state.api
    if api is None and (_state.loaded or (api := _load()) is None):
        return False
    api.streams.add(1, {"mcp_tools.stream.kind": kind})
    return True


def stream_closed(kind: str, counted: bool) -> None:
    """The stream ended, sent to the end or not (its generator's ``finally``)."""
    api = _state.api
    if counted and api is not None:
        api.streams.add(-1, {"mcp_tools.stream.kind": kind})
