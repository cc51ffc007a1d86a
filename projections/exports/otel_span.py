"""A span as labrxiv builds it from the log: plain data, sent by `otel_send`."""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal, TypeAlias

Attribute: TypeAlias = str | bool | int | float | Sequence[str]
"""An attribute value OpenTelemetry carries (the string arrays are finish reasons)."""


@dataclass(frozen=True)
class SpanEvent:
    """Something that happened during a span (an evaluation's result)."""

    name: str
    at: datetime
    attributes: Mapping[str, Attribute]


@dataclass(frozen=True)
class Span:
    """One span of a run's trace, complete: a run, a model call or a tool call."""

    name: str
    """`invoke_agent {lab}`, `chat {model}` or `execute_tool {tool}`."""
    kind: Literal["internal", "client"]
    trace_id: int
    span_id: int
    parent_id: int | None
    """The enclosing span (the run's, for a call); None for the run's own span."""
    start: datetime
    end: datetime
    attributes: Mapping[str, Attribute]
    closed_at: int
    """The log position of the event that completed the span: a live sink sends the span
    once its checkpoint passes this position."""
    events: tuple[SpanEvent, ...] = ()
    error: str | None = None
    """Why the operation failed (the span's status is then an error); None if it did not."""
