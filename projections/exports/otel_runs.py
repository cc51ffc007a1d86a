"""The spans of runs, and of a campaign's reviews and inspections, as the log holds them
now: what `labrxiv export otel` sends."""

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import Connection, or_, select

from events import EventStore
from events.store import EVENTS
from events.streams import stream_prefix
from projections.exports.otel_ids import trace_id_of
from projections.exports.otel_span import Span
from projections.exports.otel_spans import run_spans


@dataclass(frozen=True)
class RunTrace:
    """One run's (or review's, or inspection's) trace: its complete spans, and whether
    it has finished (an unfinished one's own span and its open calls are not complete,
    so not among them)."""

    run: str
    trace_id: int
    spans: tuple[Span, ...]
    finished: bool


def run_traces(store: EventStore, runs: Sequence[str]) -> list[RunTrace]:
    """The trace of each of `runs` (run streams), from its stream in the log."""
    traces = []
    for run in runs:
        spans = tuple(run_spans(store.read_stream(run)))
        finished = any(span.parent_id is None for span in spans)
        traces.append(RunTrace(run, trace_id_of(run), spans, finished))
    return traces


def reviews_and_inspections(conn: Connection, campaign: str) -> list[str]:
    """The review and inspection streams of `campaign` (their events carry it as their
    correlation id), by name."""
    kinds = [EVENTS.c.stream.startswith(stream_prefix(k)) for k in ("review", "inspect")]
    query = (
        select(EVENTS.c.stream)
        .where(EVENTS.c.correlation_id == campaign, or_(*kinds))
        .distinct()
        .order_by(EVENTS.c.stream)
    )
    return list(conn.scalars(query))
