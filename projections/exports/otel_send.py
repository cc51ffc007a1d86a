"""Send built spans to an OTLP/HTTP endpoint with OpenTelemetry's own exporter.

The spans are handed to the exporter as finished `ReadableSpan`s with their own ids and
times (the SDK's tracer would make new ids and take the clock's times), synchronously: a
caller knows whether a batch arrived before it moves on (the live sink's checkpoint).
"""

import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from urllib.parse import urlsplit, urlunsplit

import requests
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


RETRYABLE_4XX = frozenset({408, 429})
"""The 4xx answers that ask to be tried again (a timeout, too many requests)."""


class ExportFailed(Exception):
    """The endpoint did not take the spans (refused them, or did not answer in time)."""

    def __init__(self, message: str, status: int | None = None, taken: int = 0) -> None:
        super().__init__(message)
        self.status = status
        """The endpoint's last HTTP status, None when it gave no answer."""
        self.taken = taken
        """Spans the endpoint took before the batch it did not take."""

    @property
    def refused(self) -> bool:
        """Whether the endpoint refused the spans themselves (a 4xx other than 408 and
        429): sending the same spans again is answered the same way."""
        status = self.status
        return status is not None and 400 <= status < 500 and status not in RETRYABLE_4XX


class BadEndpoint(ValueError):
    """The endpoint is not an http(s) URL without credentials."""


def traces_url(endpoint: str) -> str:
    """The URL spans are posted to: `endpoint` itself when it names a path, else its
    `/v1/traces` (`http://127.0.0.1:6006` → `http://127.0.0.1:6006/v1/traces`, a query
    kept after the path). Credentials in the URL are refused, unprinted: they would be
    logged with it, and they belong in a header (`OTEL_EXPORTER_OTLP_HEADERS`)."""
    parts = urlsplit(endpoint)
    if parts.username is not None or parts.password is not None:
        raise BadEndpoint(
            "the OTLP endpoint has credentials in its URL (user:token@host): give the URL "
            "without them and the auth header in OTEL_EXPORTER_OTLP_HEADERS "
            "(e.g. OTEL_EXPORTER_OTLP_HEADERS='authorization=Bearer TOKEN')"
        )
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise BadEndpoint(f"the OTLP endpoint {endpoint!r} is not an http(s) URL with a host")
    try:
        parts.port  # noqa: B018 - raises for a port out of range or not a number
    except ValueError as exc:
        raise BadEndpoint(f"the OTLP endpoint {endpoint!r}: {exc}") from None
    if parts.path in ("", "/"):
        return urlunsplit(parts._replace(path=TRACES_PATH))
    return endpoint


class SpanSender:
    """Sends spans to one endpoint, in batches; `send` raises `ExportFailed` when a batch
    is not taken, naming the endpoint, the exporter's reason and the endpoint's status.
    Headers (auth) come from `OTEL_EXPORTER_OTLP_HEADERS` or
    `OTEL_EXPORTER_OTLP_TRACES_HEADERS`, as the exporter reads them."""

    def __init__(self, endpoint: str, timeout_s: float = 10.0) -> None:
        self.url = traces_url(endpoint)
        self._status: int | None = None
        session = requests.Session()
        session.hooks["response"].append(self._answered)
        self._exporter = OTLPSpanExporter(endpoint=self.url, timeout=timeout_s, session=session)

    def send(self, spans: Sequence[Span]) -> None:
        """Send `spans`; returns once the endpoint took every batch."""
        for start in range(0, len(spans), BATCH):
            batch = [readable(span) for span in spans[start : start + BATCH]]
            self._status = None
            with _exporter_said() as said:
                result = self._exporter.export(batch)
            if result is not SpanExportResult.SUCCESS:
                reason = said[-1] if said else "no reason given"
                message = f"cannot send spans to {self.url}: {reason}"
                raise ExportFailed(message, self._status, taken=start)

    def _answered(self, response: requests.Response, *args: object, **kwargs: object) -> None:
        self._status = response.status_code

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
