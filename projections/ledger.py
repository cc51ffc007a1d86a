"""The ledger read model: one row per tool or model call, and roll-ups of what runs spent.

A tool call is its `tool.invoked` and `tool.returned` pair (keyed by run and
`call_id`); its compute seconds are the returned `duration_s`. A call whose return
never came stays `invoked` with no duration, which is itself worth seeing.

Model calls get rows of `kind="model"` in the same table, with the token counts
(input, cached input, output, reasoning, total) and cost columns already in place;
the model events that fill them arrive later (their fold goes in `_fold`). Cost is
counted only where it is known: a call with `cost_known = false` adds nothing to
the dollars and is counted in `unknown_cost_calls`, never as a silent 0.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from sqlalchemy import (
    BigInteger,
    Column,
    Connection,
    DateTime,
    case,
    delete,
    func,
    insert,
    select,
    tuple_,
)
from sqlmodel import Field, SQLModel

from events.envelope import as_utc
from events.recorded import Recorded
from projections.projector import Projector

LEDGER_TYPES = frozenset({"tool.invoked", "tool.returned"})
"""The event types the ledger folds (model call events join when they exist)."""


class LedgerRow(SQLModel, table=True):
    """One tool or model call of a run."""

    __tablename__ = "ledger"

    run: str = Field(primary_key=True, max_length=200)
    """The run stream that made the call."""
    call_id: str = Field(primary_key=True, max_length=200)
    """The call's id within its events (pairs invoked with returned)."""
    kind: str = Field(default="tool", max_length=20)
    """`tool` or `model`."""
    lab: str | None = Field(default=None, max_length=200, index=True)
    campaign: str | None = Field(default=None, max_length=200, index=True)
    tool: str | None = Field(default=None, max_length=100)
    """The tool's name (tool calls)."""
    status: str = Field(default="invoked", max_length=20)
    """`invoked` until the call's outcome is in the log, then `returned`."""
    exit_code: int | None = None
    duration_s: float | None = None
    """Compute seconds: the wall-clock time the tool took."""
    invoked_at: datetime | None = Field(default=None, sa_column=Column(DateTime(timezone=True)))
    returned_at: datetime | None = Field(default=None, sa_column=Column(DateTime(timezone=True)))
    position: int = Field(sa_column=Column(BigInteger, nullable=False, index=True))
    """The log position of the call's first event: ledger order."""
    model: str | None = Field(default=None, max_length=200)
    """The model called (model calls)."""
    provider: str | None = Field(default=None, max_length=100)
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


LEDGER = LedgerRow.__table__
_COLUMNS = [c.name for c in LEDGER.c]


class LedgerProjector(Projector):
    """Folds tool (and later model) call events into `ledger` rows."""

    name = "ledger"
    tables = (LEDGER,)

    def apply(self, conn: Connection, events: Sequence[Recorded]) -> None:
        """Load the calls the page touches, fold the page into them, write them back."""
        calls = [e for e in events if e.type in LEDGER_TYPES]
        if not calls:
            return
        keys = sorted({(e.stream, e.payload["call_id"]) for e in calls})
        touched = tuple_(LEDGER.c.run, LEDGER.c.call_id).in_(keys)
        rows = {
            (r["run"], r["call_id"]): dict(r)
            for r in conn.execute(select(LEDGER).where(touched)).mappings()
        }
        stored = bool(rows)
        for event in calls:
            row = rows.setdefault((event.stream, event.payload["call_id"]), _new_row(event))
            _fold(row, event)
        if stored:
            conn.execute(delete(LEDGER).where(touched))
        conn.execute(insert(LEDGER), [rows[k] for k in sorted(rows)])


def _new_row(event: Recorded) -> dict[str, Any]:
    return {name: None for name in _COLUMNS} | {
        "run": event.stream,
        "call_id": event.payload["call_id"],
        "kind": "tool",
        "status": "invoked",
        "position": event.position,
    }


def _fold(row: dict[str, Any], event: Recorded) -> None:
    payload = event.payload
    row["lab"] = row["lab"] or event.actor
    row["campaign"] = row["campaign"] or event.correlation_id
    if event.type == "tool.invoked":
        row["tool"], row["invoked_at"] = payload["tool"], event.occurred_at
    elif event.type == "tool.returned":
        row["tool"] = row["tool"] or payload["tool"]
        row["status"], row["returned_at"] = "returned", event.occurred_at
        row["exit_code"], row["duration_s"] = payload["exit_code"], payload["duration_s"]
    # Model call events (called / responded / failed) fold here when they exist:
    # kind="model", model, provider, the token counts, cost_usd and cost_known.


# -- roll-ups ------------------------------------------------------------------

RollUp = Literal["run", "lab", "campaign"]


@dataclass(frozen=True)
class LedgerTotals:
    """What one run, lab or campaign spent."""

    key: str | None
    """The run stream, lab or campaign id (None: calls with no lab or campaign)."""
    calls: int
    tool_calls: int
    model_calls: int
    compute_seconds: float
    """Sum of the tool calls' durations."""
    input_tokens: int
    cached_input_tokens: int
    output_tokens: int
    reasoning_tokens: int
    tokens: int
    """Sum of the model calls' `total_tokens`."""
    dollars: float
    """Sum of the known costs."""
    unknown_cost_calls: int
    """Model calls with no known price: their cost is in no total."""


def ledger_totals(
    conn: Connection, by: RollUp = "run", campaign: str | None = None
) -> list[LedgerTotals]:
    """The ledger rolled up per run, lab or campaign (of one campaign, if given), by key."""
    key = {"run": LEDGER.c.run, "lab": LEDGER.c.lab, "campaign": LEDGER.c.campaign}[by]
    model = LEDGER.c.kind == "model"
    query = select(
        key.label("key"),
        func.count().label("calls"),
        func.sum(case((LEDGER.c.kind == "tool", 1), else_=0)).label("tool_calls"),
        func.sum(case((model, 1), else_=0)).label("model_calls"),
        func.coalesce(func.sum(LEDGER.c.duration_s), 0.0).label("compute_seconds"),
        *(
            func.coalesce(func.sum(LEDGER.c[column]), 0).label(column)
            for column in ("input_tokens", "cached_input_tokens", "output_tokens")
        ),
        func.coalesce(func.sum(LEDGER.c.reasoning_tokens), 0).label("reasoning_tokens"),
        func.coalesce(func.sum(LEDGER.c.total_tokens), 0).label("tokens"),
        func.coalesce(
            func.sum(case((LEDGER.c.cost_known.is_(True), LEDGER.c.cost_usd), else_=None)), 0.0
        ).label("dollars"),
        func.sum(case((model & LEDGER.c.cost_known.is_(False), 1), else_=0)).label(
            "unknown_cost_calls"
        ),
    ).group_by(key)
    if campaign is not None:
        query = query.where(LEDGER.c.campaign == campaign)
    totals = [
        LedgerTotals(
            key=row.key,
            calls=int(row.calls),
            tool_calls=int(row.tool_calls),
            model_calls=int(row.model_calls),
            compute_seconds=float(row.compute_seconds),
            input_tokens=int(row.input_tokens),
            cached_input_tokens=int(row.cached_input_tokens),
            output_tokens=int(row.output_tokens),
            reasoning_tokens=int(row.reasoning_tokens),
            tokens=int(row.tokens),
            dollars=float(row.dollars),
            unknown_cost_calls=int(row.unknown_cost_calls),
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
