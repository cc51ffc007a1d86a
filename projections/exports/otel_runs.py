"""The spans of runs as the log holds them now: what `labrxiv export otel` sends."""

from collections.abc import Sequence
from dataclasses import dataclass

from events import EventStore
from projections.exports.otel_ids import trace_id_of
from projections.exports.otel_span import Span
from projections.exports.otel_spans import run_spans


@dataclass(frozen=True)
class RunTrace:
    """One run's trace: its complete spans, and whether the run has finished (an
    unfinished run's own span and its open calls are not complete, so not among them)."""

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
