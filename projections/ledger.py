"""The ledger read model: one row per tool or model call, and roll-ups of what runs spent.

A tool call is its `tool.invoked` and `tool.returned` pair (keyed by run and
`call_id`); its compute seconds are the returned `duration_s`. A call whose return
never came stays `invoked` with no duration, which is itself worth seeing.

A model call is one physical attempt (`call_id`; retries are rows of their own that
share a `request_id`): a row of `kind="model"` that is `called` from its
`model.called` (written ahead of the request) until its `model.responded` (tokens as
the provider reported them, cost at the price frozen in the event, latency) or
`model.failed` (the error) arrives. A call still `called` has an unknown outcome (the
worker died mid-call; the provider may have billed it): it is counted in
`unknown_outcome_calls`. Cost is counted only where it is known: a call with
`cost_known = false` (no price, or no usage reported) adds nothing to the dollars and
is counted in `unknown_cost_calls`, never as a silent 0.

A grader that calls a model (math-prompting) reports its usage in the attempt's
`experiment.scored`, priced when the attempt was scored: one row of `kind="grader"`
(`call_id = grader/<attempt>`) holds that grading's tokens, cost and number of model
calls, so the run's tokens and dollars include what its evaluations cost.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from sqlalchemy import (
    BigInteger,
    Column,
    Connection,
    DateTime,
    Index,
    case,
    func,
    select,
)
from sqlmodel import Field, SQLModel

from events.envelope import as_utc
from events.recorded import Recorded
from events.spend import Spend, spend_of
from events.streams import stream_kind
from events.tables import table_of
from projections.ledger_phases import PHASE_KEY, PHASE_TYPES, RunPhases
from projections.run_rows import Row, RunRowsProjector, Written

TOOL_TYPES = frozenset({"tool.invoked", "tool.returned"})
MODEL_TYPES = frozenset({"model.called", "model.responded", "model.failed"})
GRADED = "experiment.scored"
CALL_TYPES = TOOL_TYPES | MODEL_TYPES
"""The event types of a call, keyed by their `call_id`."""
LEDGER_TYPES = CALL_TYPES | {GRADED}
"""The event types the ledger folds (`experiment.scored` only when grading used a model)."""


class LedgerRow(SQLModel, table=True):
    """One tool or model call of a run."""

    __tablename__ = "ledger"
    __table_args__ = (Index("ix_ledger_campaign_kind", "campaign", "kind"),)
    """A campaign's rows of one kind (its reviewers' calls, for its budget gauges)."""

    run: str = Field(primary_key=True, max_length=200)
    """The run stream that made the call (a paper's review stream, for a reviewer's)."""
    call_id: str = Field(primary_key=True, max_length=200)
    """The call's id within its events (pairs invoked with returned)."""
    kind: str = Field(default="tool", max_length=20)
    """`tool`, `reported` (a tool call an agent's own tool ran, seen in its model traffic:
    `ToolInvoked.reported`), `model`, `grader`, `review` (a reviewer's model call) or
    `inspection`."""
    lab: str | None = Field(default=None, max_length=200, index=True)
    campaign: str | None = Field(default=None, max_length=200, index=True)
    tool: str | None = Field(default=None, max_length=100)
    """The tool's name (tool calls)."""
    status: str = Field(default="invoked", max_length=20)
    """Tools: `invoked` until the call's outcome is in the log, then `returned`.
    Models: `called` until then (unknown outcome), then `responded` or `failed`."""
    exit_code: int | None = None
    duration_s: float | None = None
    """Compute seconds: the wall-clock time the tool took."""
    invoked_at: datetime | None = Field(default=None, sa_column=Column(DateTime(timezone=True)))
    returned_at: datetime | None = Field(default=None, sa_column=Column(DateTime(timezone=True)))
    position: int = Field(sa_column=Column(BigInteger, nullable=False, index=True))
    """The log position of the call's first event: ledger order."""
    model: str | None = Field(default=None, max_length=200)
    """The model called; once it answered, the model the provider says answered."""
    provider: str | None = Field(default=None, max_length=100)
    """The endpoint's host[:port] (model calls)."""
    request_id: str | None = Field(default=None, max_length=200)
    """The logical model request; its retries share it (model calls)."""
    attempt: int | None = None
    """1 for a request's first attempt, 2 for its first retry… (model calls)."""
    phase: str | None = Field(default=None, max_length=20)
    """The research phase the call was made in: a model call's as its `model.called`
    says; a tool call's the run's phase when it was invoked (its last `phase.entered`,
    a fork's parent's at the fork point before its own); None for labs without phases."""
    latency_s: float | None = None
    """Seconds from sending the request to its answer or failure (model calls)."""
    error: str | None = Field(default=None, max_length=20)
    """Why a failed model call failed (`rate_limited`, `timeout`…)."""
    input_tokens: int | None = None
    cached_input_tokens: int | None = None
    """Input tokens served from the provider's cache (part of `input_tokens`)."""
    output_tokens: int | None = None
    reasoning_tokens: int | None = None
    total_tokens: int | None = None
    """Tokens as the run's token budget counts them, as the model event reports it."""
    cost_usd: float | None = None
    """Dollars at the price frozen in the event; None when the price is unknown."""
    cost_known: bool | None = None
    """False for a model with no price (counted apart); None for tool calls."""
    grader_calls: int | None = None
    """Model calls the grader made for the attempt (`kind="grader"` rows)."""


LEDGER = table_of(LedgerRow)
_COLUMNS = [c.name for c in LEDGER.c]


_Call = tuple[tuple[str, str], Recorded]
"""A call's event, with the call's key (run, call id)."""


class LedgerProjector(RunRowsProjector[list[_Call], tuple[str, str]]):
    """Folds tool and model call events into `ledger` rows, keyed by run and call id
    (`projections.run_rows`)."""

    name = "ledger"
    version = 3
    """2: an agent's reported tool calls are rows of kind `reported`. 3: an index of a
    campaign's rows by kind."""
    cost = 4.2
    table = LEDGER
    tables = (LEDGER,)

    def __init__(self) -> None:
        self.phases = RunPhases()

    def group(
        self, conn: Connection, events: Sequence[Recorded]
    ) -> tuple[list[_Call], set[tuple[str, str]]] | None:
        """The page's call events with their keys, tool calls tagged with their run's phase."""
        calls = []
        self.phases.prepare(conn, events)
        for event in events:
            if event.type in CALL_TYPES:
                if event.type == "tool.invoked":
                    event = self.phases.tag(event)
                calls.append(((event.stream, event.payload["call_id"]), event))
            elif event.type in PHASE_TYPES:
                self.phases.see(conn, event)
            elif event.type == GRADED and (call_id := _call_id(event)) is not None:
                calls.append(((event.stream, call_id), event))
        if not calls:
            return None
        return calls, {key for key, _ in calls}

    def fold(
        self, conn: Connection, page: list[_Call], stored: dict[tuple[str, str], Row]
    ) -> Written:
        """Each call event into its call's row, in log order."""
        rows = stored
        for key, event in page:
            row = rows.get(key)
            if row is None:  # not setdefault: that built a new row for every event
                row = rows[key] = _new_row(key, event)
            _fold(row, event)
        return [(LEDGER, list(rows.values()))]


def _call_id(event: Recorded) -> str | None:
    """The ledger key of a call event; a grading's is `grader/<attempt>` (None: no model)."""
    if event.type != GRADED:
        return event.payload["call_id"]
    return f"grader/{event.payload['attempt']}" if event.payload.get("grader_usage") else None


_BLANK = dict.fromkeys(_COLUMNS)
_KIND_STATUS = {
    "tool.invoked": ("tool", "invoked"),
    "tool.returned": ("tool", "invoked"),
    "model.called": ("model", "called"),
    "model.responded": ("model", "called"),
    "model.failed": ("model", "called"),
    GRADED: ("grader", "responded"),
}
"""A new row's kind and status before its first event is folded, by that event's type."""
TOOL_KINDS = ("tool", "reported")
"""Rows of tool calls: those labrxiv ran, and those an agent reported."""
MODEL_KINDS = ("model", "review", "inspection")
"""Rows of model calls: a lab's, a reviewer's, the LLM inspector's."""
_CALL_KIND = {"review": "review", "revieweval": "review", "inspect": "inspection"}
"""The kind of a model call by its stream's kind: a reviewer's call (in a review or a
reviewer evaluation) and the LLM inspector's (`analyze --inspector`) are kinds of their
own; any other stream's is a lab's (`model`)."""


def _new_row(key: tuple[str, str], event: Recorded) -> dict[str, Any]:
    row = _BLANK.copy()  # a copy of a template: building it from the column names cost more
    row["run"], row["call_id"] = key
    row["kind"], row["status"] = _KIND_STATUS[event.type]
    if row["kind"] == "tool" and event.payload.get("reported"):
        row["kind"] = "reported"
    if row["kind"] == "model":
        row["kind"] = _CALL_KIND.get(stream_kind(key[0]), "model")
    row["position"] = event.position
    return row


def _fold(row: dict[str, Any], event: Recorded) -> None:
    payload = event.payload
    row["lab"] = row["lab"] or event.actor
    row["campaign"] = row["campaign"] or event.correlation_id
    if event.type == "tool.invoked":
        row["tool"], row["invoked_at"] = payload["tool"], event.occurred_at
        row["phase"] = payload.get(PHASE_KEY)
    elif event.type == "tool.returned":
        row["tool"] = row["tool"] or payload["tool"]
        row["status"], row["returned_at"] = "returned", event.occurred_at
        row["exit_code"], row["duration_s"] = payload["exit_code"], payload["duration_s"]
    elif event.type in MODEL_TYPES:
        _fold_model(row, event)
    else:
        _fold_grading(row, event)


def _fold_grading(row: dict[str, Any], event: Recorded) -> None:
    """The model calls a grader made for one attempt, summed into one row."""
    payload = event.payload
    row["model"], row["tool"], row["attempt"] = payload.get("grader_model"), "evaluate", None
    row["invoked_at"] = row["returned_at"] = event.occurred_at
    _spent(row, event)
    row["grader_calls"] = payload["grader_usage"].get("calls", 0)
    # Graders report no reasoning tokens: unknown (None), as the ledger always stored it,
    # not 0 (a 0 would also differ, row for row, from rows an older labrxiv folded).
    row["reasoning_tokens"] = payload["grader_usage"].get("reasoning_tokens")


def _fold_model(row: dict[str, Any], event: Recorded) -> None:
    payload = event.payload
    if event.type == "model.called":
        row["model"], row["provider"] = row["model"] or payload["model"], payload["provider"]
        row["request_id"], row["attempt"] = payload["request_id"], payload["attempt"]
        row["phase"], row["invoked_at"] = payload.get("phase"), event.occurred_at
        return
    row["returned_at"], row["latency_s"] = event.occurred_at, payload["latency_s"]
    if event.type == "model.failed":
        row["status"], row["error"] = "failed", payload["error"]
        return
    row["status"], row["model"] = "responded", payload["model"]
    _spent(row, event, reported=payload["usage"] is not None)


def _spent(row: dict[str, Any], event: Recorded, reported: bool = True) -> None:
    """Tokens and cost as the one counting rule (`events.spend`) reads the event; tokens
    the provider did not report stay unknown (None), not 0."""
    spent = spend_of(event.type, event.payload)
    assert spent is not None
    row["cost_known"] = not spent.unknown_cost
    row["cost_usd"] = spent.dollars if row["cost_known"] else None
    if reported:
        row["input_tokens"] = spent.input_tokens
        row["cached_input_tokens"] = spent.cached_input_tokens
        row["output_tokens"] = spent.output_tokens
        row["reasoning_tokens"] = spent.reasoning_tokens
        row["total_tokens"] = spent.tokens


def spend_of_row(row: Mapping[str, Any]) -> Spend:
    """What an answered model call's or a model-using grading's row spent, as the one
    counting rule (`events.spend`) read its event: tokens the provider did not report
    count 0, a cost that is unknown adds no dollars and is counted in `unknown_cost`."""
    known = bool(row["cost_known"])
    return Spend(
        input_tokens=row["input_tokens"] or 0,
        cached_input_tokens=row["cached_input_tokens"] or 0,
        output_tokens=row["output_tokens"] or 0,
        reasoning_tokens=row["reasoning_tokens"] or 0,
        dollars=float(row["cost_usd"] or 0.0) if known else 0.0,
        priced=1,
        unknown_cost=int(not known),
        unknown_cost_gradings=int(not known and row["kind"] == "grader"),
    )


# -- roll-ups ------------------------------------------------------------------

RollUp = Literal["run", "lab", "campaign"]


@dataclass(frozen=True)
class LedgerTotals:
    """What one run, lab or campaign spent."""

    key: str | None
    """The run stream, lab or campaign id (None: calls with no lab or campaign)."""
    calls: int
    tool_calls: int
    """Tool calls labrxiv ran (an agent's reported calls are rows of their own, in `calls`)."""
    model_calls: int
    grader_calls: int
    """Model calls made by graders (math-prompting), in the tokens and dollars below."""
    compute_seconds: float
    """Sum of the durations of the tool calls labrxiv ran (an agent's reported calls took
    their time inside its session, around its lab calls)."""
    input_tokens: int
    cached_input_tokens: int
    output_tokens: int
    reasoning_tokens: int
    tokens: int
    """Sum of the model calls' `total_tokens`."""
    dollars: float
    """Sum of the known costs."""
    priced_calls: int
    """Answered model calls and model-using gradings: those whose cost is counted, known
    or not."""
    unknown_cost_calls: int
    """Of those, the ones whose cost is unknown (no price, or no usage): in no total."""
    unknown_outcome_calls: int
    """Model calls written ahead whose answer or failure never came (may have been billed)."""
    failed_calls: int
    """Model calls that failed (each retry is a call of its own)."""


def ledger_totals(
    conn: Connection,
    by: RollUp = "run",
    campaign: str | None = None,
    runs: Sequence[str] | None = None,
) -> list[LedgerTotals]:
    """The ledger rolled up per run, lab or campaign (of one campaign, and of some runs'
    calls, if given), by key."""
    key = {"run": LEDGER.c.run, "lab": LEDGER.c.lab, "campaign": LEDGER.c.campaign}[by]
    model = LEDGER.c.kind.in_(MODEL_KINDS)
    priced = LEDGER.c.kind.in_([*MODEL_KINDS, "grader"])
    query = select(
        key.label("key"),
        func.count().label("calls"),
        func.sum(case((LEDGER.c.kind == "tool", 1), else_=0)).label("tool_calls"),
        func.sum(case((model, 1), else_=0)).label("model_calls"),
        func.coalesce(func.sum(LEDGER.c.grader_calls), 0).label("grader_calls"),
        func.coalesce(
            func.sum(case((LEDGER.c.kind != "reported", LEDGER.c.duration_s), else_=None)), 0.0
        ).label("compute_seconds"),
        *(
            func.coalesce(func.sum(LEDGER.c[column]), 0).label(column)
            for column in ("input_tokens", "cached_input_tokens", "output_tokens")
        ),
        func.coalesce(func.sum(LEDGER.c.reasoning_tokens), 0).label("reasoning_tokens"),
        func.coalesce(func.sum(LEDGER.c.total_tokens), 0).label("tokens"),
        func.coalesce(
            func.sum(case((LEDGER.c.cost_known.is_(True), LEDGER.c.cost_usd), else_=None)), 0.0
        ).label("dollars"),
        func.sum(case((priced & LEDGER.c.cost_known.is_not(None), 1), else_=0)).label(
            "priced_calls"
        ),
        func.sum(case((priced & LEDGER.c.cost_known.is_(False), 1), else_=0)).label(
            "unknown_cost_calls"
        ),
        func.sum(case((model & (LEDGER.c.status == "called"), 1), else_=0)).label(
            "unknown_outcome_calls"
        ),
        func.sum(case((model & (LEDGER.c.status == "failed"), 1), else_=0)).label("failed_calls"),
    ).group_by(key)
    if campaign is not None:
        query = query.where(LEDGER.c.campaign == campaign)
    if runs is not None:
        query = query.where(LEDGER.c.run.in_(list(runs)))
    totals = [
        LedgerTotals(
            key=row.key,
            calls=int(row.calls),
            tool_calls=int(row.tool_calls),
            model_calls=int(row.model_calls),
            grader_calls=int(row.grader_calls),
            compute_seconds=float(row.compute_seconds),
            input_tokens=int(row.input_tokens),
            cached_input_tokens=int(row.cached_input_tokens),
            output_tokens=int(row.output_tokens),
            reasoning_tokens=int(row.reasoning_tokens),
            tokens=int(row.tokens),
            dollars=float(row.dollars),
            priced_calls=int(row.priced_calls),
            unknown_cost_calls=int(row.unknown_cost_calls),
            unknown_outcome_calls=int(row.unknown_outcome_calls),
            failed_calls=int(row.failed_calls),
        )
        for row in conn.execute(query)
    ]
    return sorted(totals, key=lambda t: (t.key is None, t.key or ""))


def ledger_calls(
    conn: Connection, run: str | None = None, campaign: str | None = None
) -> list[dict[str, Any]]:
    """Ledger rows in log order, of one run or campaign if given."""
    query = select(LEDGER).order_by(LEDGER.c.position)
    if run is not None:
        query = query.where(LEDGER.c.run == run)
    if campaign is not None:
        query = query.where(LEDGER.c.campaign == campaign)
    calls = []
    for row in conn.execute(query).mappings():
        call = dict(row)
        for key in ("invoked_at", "returned_at"):
            call[key] = None if call[key] is None else as_utc(call[key])
        calls.append(call)
    return calls
