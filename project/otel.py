"""The demo's OpenTelemetry SDK, from the standard OTEL_* variables (when the SDK is installed).

``OTEL_TRACES_EXPORTER`` and ``OTEL_METRICS_EXPORTER``: ``console`` (print to stdout), ``otlp``
(needs ``opentelemetry-exporter-otlp``, not a dependency of this project) or ``none`` (the
default here). ``OTEL_SERVICE_NAME`` names the resource (default ``django-mcp-tools-demo``);
the OTLP exporters read ``OTEL_EXPORTER_OTLP_ENDPOINT`` and friends themselves.
"""

from __future__ import annotations

import logging
import os
from typing import Any

logger = logging.getLogger("project")
_done = False


def configure() -> None:
    """Install the SDK's tracer and meter providers once per process, if asked and possible."""
    global _done
    traces = os.environ.get("OTEL_TRACES_EXPORTER", "none").strip().lower()
    metrics_ = os.environ.get("OTEL_METRICS_EXPORTER", "none").strip().lower()
    if _done or (traces in ("", "none") and metrics_ in ("", "none")):
        return
    _done = True
    try:
        from opentelemetry import metrics, trace
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
    except ImportError:
        logger.warning("OTEL_*_EXPORTER is set but opentelemetry-sdk is not installed: no telemetry")
        return
    resource = Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME", "django-mcp-tools-demo")})
    span_exporter = _exporter("traces", traces)
    if span_exporter is not None:
        provider = TracerProvider(resource=resource)
        console = traces == "console"
        provider.add_span_processor(
            SimpleSpanProcessor(span_exporter) if console else BatchSpanProcessor(span_exporter)
        )
        trace.set_tracer_provider(provider)
    metric_exporter = _exporter("metrics", metrics_)
    if metric_exporter is not None:
        reader = PeriodicExportingMetricReader(metric_exporter)
        metrics.set_meter_provider(MeterProvider(resource=resource, metric_readers=[reader]))


def _exporter(signal: str, name: str) -> Any:
    if name in ("", "none"):
        return None
    try:
        if name == "console":
            if signal == "traces":
                from opentelemetry.sdk.trace.export import ConsoleSpanExporter

                return ConsoleSpanExporter()
            from opentelemetry.sdk.metrics.export import ConsoleMetricExporter

            return ConsoleMetricExporter()
        if name == "otlp":
            if signal == "traces":
                from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

                return OTLPSpanExporter()
            from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter

            return OTLPMetricExporter()
    except ImportError:
        logger.warning("OTEL_%s_EXPORTER=otlp needs opentelemetry-exporter-otlp-proto-http", signal.upper())
        return None
    logger.warning("OTEL_%s_EXPORTER=%s is not supported by the demo (console, otlp, none)", signal.upper(), name)
    return None
