"""The OpenTelemetry SDK for tests: one tracer and one meter provider per process (the API lets
a process set each once), with in-memory exporters the ``otel`` fixture clears per test."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from mcp_tools import telemetry

sdk_trace = pytest.importorskip("opentelemetry.sdk.trace")
from opentelemetry import metrics, trace  # noqa: E402
from opentelemetry.sdk.metrics import MeterProvider  # noqa: E402
from opentelemetry.sdk.metrics.export import InMemoryMetricReader  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402
from opentelemetry.trace import SpanKind  # noqa: E402

__all__ = ["Providers", "otel_fixture", "points", "server_spans"]


class Providers:
    spans = InMemorySpanExporter()
    reader = InMemoryMetricReader()
    installed = False


@pytest.fixture(name="otel")
def otel_fixture() -> Iterator[type[Providers]]:
    """The providers, installed once per process, with nothing recorded yet by this test."""
    if not Providers.installed:
        provider = sdk_trace.TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(Providers.spans))
        trace.set_tracer_provider(provider)
        metrics.set_meter_provider(MeterProvider(metric_readers=[Providers.reader]))
        Providers.installed = True
    telemetry.reload()
    Providers.spans.clear()
    Providers.reader.get_metrics_data()  # drop what earlier tests recorded (cumulative: compare deltas)
    yield Providers
    Providers.spans.clear()


def server_spans() -> list[Any]:
    return [s for s in Providers.spans.get_finished_spans() if s.kind == SpanKind.SERVER]


def points(name: str) -> list[Any]:
    """The data points of one metric (cumulative since the process set the provider)."""
    data = Providers.reader.get_metrics_data()
    found = []
    for resource in data.resource_metrics if data else []:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                if metric.name == name:
                    found.extend(metric.data.data_points)
    return found
