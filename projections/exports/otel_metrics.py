"""The live OpenTelemetry sink's counters, in the process that runs it (the projector).

Made on first use, as `workers.metrics` makes its own: prometheus-client picks its value
class when it is first imported.
"""

from functools import cache
from typing import Any


@cache
def spans_skipped() -> Any:
    """Spans the sink gave up on: their page was refused by the endpoint every time."""
    from prometheus_client import Counter

    return Counter(
        "labrxiv_otel_spans_skipped",
        "Spans the live OpenTelemetry sink skipped: the endpoint refused their page "
        "(a 4xx other than 408 and 429) on every try.",
    )
