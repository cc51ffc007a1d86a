"""The runs an export covers, each with what every format needs: its row of the runs
read model, its events, its verdict, its model usage as the ledger counts it, and its
conversation (`projections.exports.conversation`)."""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection

from events import Event, EventStore
from events.spend import NOTHING, Spend
from projections.exports.conversation import Conversation, Exchange, conversation_of, exchanges
from projections.findings import findings_of
from projections.ledger import MODEL_KINDS, ledger_calls, spend_of_row
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
    """What a run's calls of one model spent: the ledger's rows summed by the one
    counting rule (`events.spend`)."""

    calls: int = 0
    """Model calls: the answered ones, and those its gradings made."""
    spend: Spend = NOTHING
    """Tokens and known dollars, with the calls and gradings of unknown cost counted."""

    @property
    def cost_usd(self) -> float | None:
        """Known costs summed; None when no call's cost is known."""
        return self.spend.dollars if self.spend.unknown_cost < self.spend.priced else None

    @property
    def unknown_cost(self) -> int:
        """Answered calls and gradings whose cost is unknown: in no `cost_usd`."""
        return self.spend.unknown_cost

    def __add__(self, other: "ModelTokens") -> "ModelTokens":
        return ModelTokens(calls=self.calls + other.calls, spend=self.spend + other.spend)


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
    """Ledger rows of answered model calls and of gradings summed by model
    (`projections.ledger.spend_of_row`)."""
    sums: dict[str, ModelTokens] = {}
    for call in calls:
        grading = call["kind"] == "grader"
        if call["kind"] not in USAGE_KINDS or not (grading or call["status"] == "responded"):
            continue
        model = call["model"] or GRADER
        made = (call["grader_calls"] or 0) if grading else 1
        sums[model] = sums.get(model, ModelTokens()) + ModelTokens(made, spend_of_row(call))
    return dict(sorted(sums.items()))
