"""The live OpenTelemetry sink's metrics, in the process that runs it (the projector,
which serves them with `--metrics-port`).

The counters are made on first use, as `workers.metrics` makes its own: prometheus-client
picks its value class when it is first imported. The lag is read from the log and the
sink's checkpoint at each scrape (`SinkLag`).
"""

from collections.abc import Iterator
from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from projections.exports.otel_sink import OtelSink


@cache
def spans_sent() -> Any:
    """Spans the endpoint took from the sink."""
    from prometheus_client import Counter

    return Counter(
        "labrxiv_otel_spans_sent",
        "Spans the live OpenTelemetry sink sent and the endpoint took.",
    )


@cache
def spans_skipped() -> Any:
    """Spans the sink gave up on: their page was refused by the endpoint every time."""
    from prometheus_client import Counter

    return Counter(
        "labrxiv_otel_spans_skipped",
        "Spans the live OpenTelemetry sink skipped: the endpoint refused their page "
        "(a 4xx other than 408 and 429) on every try.",
    )


class SinkLag:
    """A collector of how far the sink is behind the head of the log, read at each
    scrape: the log's last position less the sink's checkpoint."""

    def __init__(self, sink: "OtelSink") -> None:
        self.sink = sink

    def describe(self) -> list[Any]:
        """Nothing: registering the collector must not query the database."""
        return []

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import GaugeMetricFamily

        head = self.sink.store.max_position()
        yield GaugeMetricFamily(
            "labrxiv_otel_sink_lag_events",
            "Log positions the live OpenTelemetry sink has not gone past yet (head minus "
            "its checkpoint).",
            value=max(0, head - self.sink.position()),
        )
