"""The runs an export covers, each with what every format needs: its row of the runs
read model, its events, its verdict, its model usage as the ledger counts it, and its
conversation (`projections.exports.conversation`)."""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection

from events import Event, EventStore
from projections.exports.conversation import Conversation, Exchange, conversation_of, exchanges
from projections.findings import findings_of
from projections.ledger import MODEL_KINDS, ledger_calls
from projections.runs import RunView, runs_of
from runstate.fork import begin, loader
from runstate.state import RunState

USAGE_KINDS = (*MODEL_KINDS, "grader")
"""Ledger rows whose tokens a run's model usage sums: its model calls and the model
calls its gradings made."""
GRADER = "grader"
"""The model name of a grading whose grader did not say which model it called."""


@dataclass(frozen=True)
class ModelTokens:
    """What a run's calls of one model spent, summed from the ledger's rows."""

    calls: int = 0
    input_tokens: int = 0
    cached_input_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0
    total_tokens: int = 0
    cost_usd: float | None = None
    """Known costs summed; None when no call's cost is known."""

    def __add__(self, other: "ModelTokens") -> "ModelTokens":
        costs = [c for c in (self.cost_usd, other.cost_usd) if c is not None]
        return ModelTokens(
            calls=self.calls + other.calls,
            input_tokens=self.input_tokens + other.input_tokens,
            cached_input_tokens=self.cached_input_tokens + other.cached_input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            reasoning_tokens=self.reasoning_tokens + other.reasoning_tokens,
            total_tokens=self.total_tokens + other.total_tokens,
            cost_usd=sum(costs) if costs else None,
        )


@dataclass(frozen=True)
class ExportedRun:
    """One run, as every export format reads it."""

    view: RunView
    events: list[Event]
    """The run's own stream in version order (a fork's inherited events are its parent's)."""
    verdict: str | None
    """PASS, SUSPICIOUS or FAIL (`analysis.verdict`); None before the findings read
    model judged the run."""
    usage: dict[str, ModelTokens]
    """Model usage by model, as the ledger counts it."""
    answered: list[Exchange]
    """Its answered model calls whose blobs the log kept, in log order."""
    conversation: Conversation
    began: RunState | None = None
    """Its state as it begins (`runstate.fork.begin`): a fork's, its trajectory's at the
    fork point, whence its wall time goes on; None for a log without the trajectory a
    fork names."""


def exported_runs(
    store: EventStore,
    conn: Connection,
    streams: Sequence[str],
    schemas: Mapping[str, dict[str, Any]] | None = None,
) -> list[ExportedRun]:
    """The runs `streams`, in stream order, read from the read models and the log
    (`schemas`: tool declarations for runs that called no model)."""
    found = []
    for view in runs_of(conn, streams=streams):
        events = store.read_stream(view.stream)
        answered = exchanges(events, store.get_blob)
        judged = findings_of(conn, run=view.stream).get(view.stream)
        found.append(
            ExportedRun(
                view=view,
                events=events,
                verdict=None if judged is None else judged.verdict,
                usage=usage_of(ledger_calls(conn, run=view.stream)),
                answered=answered,
                conversation=conversation_of(events, answered, store.get_blob, schemas),
                began=_began(store, events),
            )
        )
    return found


def _began(store: EventStore, events: Sequence[Event]) -> RunState | None:
    """The state of the run whose stream is `events` as it begins (`runstate.fork.begin`)."""
    try:
        return begin(events[0], loader(store)) if events else None
    except ValueError:  # a fork whose trajectory the log does not hold
        return None


def usage_of(calls: Sequence[Mapping[str, Any]]) -> dict[str, ModelTokens]:
    """Ledger rows of model calls and gradings summed by model (unknown tokens count 0)."""
    sums: dict[str, dict[str, Any]] = {}
    for call in calls:
        grading = call["kind"] == "grader"
        if call["kind"] not in USAGE_KINDS or not (grading or call["status"] == "responded"):
            continue
        row = sums.setdefault(call["model"] or GRADER, {"calls": 0, "cost_usd": None})
        row["calls"] += (call["grader_calls"] or 0) if grading else 1
        for key in (
            "input_tokens",
            "cached_input_tokens",
            "output_tokens",
            "reasoning_tokens",
            "total_tokens",
        ):
            row[key] = row.get(key, 0) + (call[key] or 0)
        if call["cost_known"]:
            row["cost_usd"] = (row["cost_usd"] or 0.0) + call["cost_usd"]
    return {model: ModelTokens(**row) for model, row in sorted(sums.items())}
