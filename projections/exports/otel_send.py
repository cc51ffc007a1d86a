"""Send built spans to an OTLP/HTTP endpoint with OpenTelemetry's own exporter.

The spans are handed to the exporter as finished `ReadableSpan`s with their own ids and
times (the SDK's tracer would make new ids and take the clock's times), synchronously: a
caller knows whether a batch arrived before it moves on (the live sink's checkpoint).
"""

import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from urllib.parse import urlsplit

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.trace.export import SpanExportResult
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

from projections.exports.otel_span import Span

TRACES_PATH = "/v1/traces"
"""Where an OTLP/HTTP receiver takes traces, when the endpoint given names no path."""

BATCH = 512
"""Spans sent in one request."""

RESOURCE = Resource({"service.name": "labrxiv", "openinference.project.name": "labrxiv"})
"""Who sent the spans: the service `labrxiv` (Phoenix files them under the project
`labrxiv`, from `openinference.project.name`)."""

SCOPE = InstrumentationScope("labrxiv.projections.exports")

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

_EXPORTER_LOGGER = "opentelemetry.exporter.otlp"


class ExportFailed(Exception):
    """The endpoint did not take the spans (refused them, or did not answer in time)."""


class BadEndpoint(ValueError):
    """The endpoint is not an http(s) URL."""


def traces_url(endpoint: str) -> str:
    """The URL spans are posted to: `endpoint` itself when it names a path, else its
    `/v1/traces` (`http://127.0.0.1:6006` → `http://127.0.0.1:6006/v1/traces`)."""
    parts = urlsplit(endpoint)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise BadEndpoint(f"the OTLP endpoint {endpoint!r} is not an http(s) URL with a host")
    try:
        parts.port  # noqa: B018 - raises for a port out of range or not a number
    except ValueError as exc:
        raise BadEndpoint(f"the OTLP endpoint {endpoint!r}: {exc}") from None
    if parts.path in ("", "/"):
        return endpoint.rstrip("/") + TRACES_PATH
    return endpoint


class SpanSender:
    """Sends spans to one endpoint, in batches; `send` raises `ExportFailed` when a batch
    is not taken, naming the endpoint and the exporter's reason."""

    def __init__(self, endpoint: str, timeout_s: float = 10.0) -> None:
        self.url = traces_url(endpoint)
        self._exporter = OTLPSpanExporter(endpoint=self.url, timeout=timeout_s)

    def send(self, spans: Sequence[Span]) -> None:
        """Send `spans`; returns once the endpoint took every batch."""
        for start in range(0, len(spans), BATCH):
            batch = [readable(span) for span in spans[start : start + BATCH]]
            with _exporter_said() as said:
                result = self._exporter.export(batch)
            if result is not SpanExportResult.SUCCESS:
                reason = said[-1] if said else "no reason given"
                raise ExportFailed(f"cannot send spans to {self.url}: {reason}")

    def close(self) -> None:
        """Let the exporter's connections go."""
        self._exporter.shutdown()


def readable(span: Span) -> ReadableSpan:
    """`span` as the SDK's finished span, with its own ids and times."""
    context = SpanContext(span.trace_id, span.span_id, False, TraceFlags(TraceFlags.SAMPLED))
    parent = None
    if span.parent_id is not None:
        parent = SpanContext(span.trace_id, span.parent_id, False, context.trace_flags)
    status = Status(StatusCode.ERROR, span.error) if span.error else Status(StatusCode.OK)
    return ReadableSpan(
        name=span.name,
        context=context,
        parent=parent,
        resource=RESOURCE,
        attributes=dict(span.attributes),
        events=[Event(e.name, dict(e.attributes), _nanos(e.at)) for e in span.events],
        kind=SpanKind.CLIENT if span.kind == "client" else SpanKind.INTERNAL,
        status=status,
        start_time=_nanos(span.start),
        end_time=_nanos(span.end),
        instrumentation_scope=SCOPE,
    )


def _nanos(moment: datetime) -> int:
    """Nanoseconds since the epoch, exactly (a float's would round the microseconds)."""
    return (moment - EPOCH) // timedelta(microseconds=1) * 1000


class _Said(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        lines = record.getMessage().strip().splitlines()
        self.lines.append(lines[0] if lines else record.levelname)


@contextmanager
def _exporter_said() -> Iterator[list[str]]:
    """What the exporter logs meanwhile (its reasons for a failure), kept instead of
    printed: the caller says it once, in its own words."""
    logger = logging.getLogger(_EXPORTER_LOGGER)
    handler = _Said()
    propagate = logger.propagate
    logger.addHandler(handler)
    logger.propagate = False
    try:
        yield handler.lines
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate
