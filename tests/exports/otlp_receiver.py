"""A minimal OTLP/HTTP trace receiver for tests: every request's spans decoded with
`opentelemetry-proto` (the protocol's own messages), kept in arrival order. It can refuse
requests (`refuse`, with the status `refuse_status`), as a backend that is down or
rejects the spans does, keeps each request's headers, and forward what it takes to
another receiver (`forward_to`: Phoenix), so a test counts what was sent and reads
what the backend kept."""

import threading
import urllib.request
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue


@dataclass(frozen=True)
class Received:
    """One span as it arrived."""

    trace_id: str
    span_id: str
    parent_id: str
    name: str
    kind: int
    attributes: dict[str, Any]
    events: list[tuple[str, dict[str, Any]]]
    status_code: int
    resource: dict[str, Any]


def value_of(value: AnyValue) -> Any:
    """An OTLP attribute value as Python."""
    which = value.WhichOneof("value")
    if which == "array_value":
        return [value_of(v) for v in value.array_value.values]
    return getattr(value, which) if which else None


class OtlpReceiver:
    """Listens on a free port of 127.0.0.1 until closed."""

    def __init__(self, forward_to: str | None = None) -> None:
        self.spans: list[Received] = []
        self.requests = 0
        self.refuse = 0
        """Requests still to refuse, with `refuse_status`."""
        self.refuse_status = 400
        """400 by default: a refusal the exporter does not retry."""
        self.headers: list[dict[str, str]] = []
        """Each request's headers, lower-cased names."""
        self.paths: list[str] = []
        """Each request's path, with its query."""
        self.forward_to = forward_to
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        """The base URL (the exporter posts to its `/v1/traces`)."""
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def take(self, body: bytes, headers: dict[str, str]) -> bool:
        """Decode and keep one request's spans; False when refused."""
        with self._lock:
            self.requests += 1
            self.headers.append(headers)
            if self.refuse:
                self.refuse -= 1
                return False
            request = ExportTraceServiceRequest.FromString(body)
            for resource_spans in request.resource_spans:
                resource = {a.key: value_of(a.value) for a in resource_spans.resource.attributes}
                for scope in resource_spans.scope_spans:
                    self.spans.extend(_received(span, resource) for span in scope.spans)
        if self.forward_to is not None:
            post = urllib.request.Request(
                self.forward_to, body, {"Content-Type": "application/x-protobuf"}
            )
            with urllib.request.urlopen(post, timeout=30) as answer:
                answer.read()
        return True

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> "OtlpReceiver":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _received(span: Any, resource: dict[str, Any]) -> Received:
    return Received(
        trace_id=span.trace_id.hex(),
        span_id=span.span_id.hex(),
        parent_id=span.parent_span_id.hex(),
        name=span.name,
        kind=span.kind,
        attributes={a.key: value_of(a.value) for a in span.attributes},
        events=[(e.name, {a.key: value_of(a.value) for a in e.attributes}) for e in span.events],
        status_code=span.status.code,
        resource=resource,
    )


def _handler(receiver: OtlpReceiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            headers = {k.lower(): v for k, v in self.headers.items()}
            receiver.paths.append(self.path)
            if urlsplit(self.path).path != "/v1/traces":
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            if not receiver.take(body, headers):
                self.send_response(receiver.refuse_status, "spans refused by the test")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            answer = ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *args: object) -> None:
            pass

    return Handler
