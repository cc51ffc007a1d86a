"""Efficiency curves (ResearchGym) and the paper curve (AgentRxiv), as read models.

`curve_points`: one row per `experiment.scored`, with what the run had used when it
was scored: wall time (`runstate.budget.wall_seconds`: since its `run.started`, less the
time it stood stopped, from each `run.interrupted` to its `run.resumed`), compute
seconds (sum of its `tool.returned` durations up to and including the graded call, of
the calls labrxiv ran: as the ledger counts them, not an agent's reported calls), model
tokens and dollars (its answered model calls and the model use of its gradings, this one
included, counted by the one rule in `events.spend`; calls of unknown cost are counted
in `unknown_cost_calls` and add no dollars), and its best score so far.

`curve_papers`: one row per `paper.submitted`, numbered in the campaign's submission
order (log order), with the submitting run's best score at that moment: AgentRxiv's
"best score per paper" plot.

Best so far is ranked by the one rule of `runstate.best`: the highest normalized score
(higher is better in either direction), or for attempts scored without one, the best raw
score in the direction its event recorded.

A fork (`labrxiv fork`) goes on from the trajectory it stands on, as its folded state
and its budget do (`runstate.fork.rebase`): its wall time from the time its parent had
used at the fork point, its best so far from its parent's attempts. Its attempts, tokens,
dollars and compute seconds are its own (its parent's are on its parent's curve, and a
campaign's totals add the runs' up).

`curve_runs` holds each run's running totals, which the fold needs across pages.
"""

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy import BigInteger, Column, Connection, DateTime, Table, func, or_, select
from sqlmodel import Field, SQLModel
from sqlmodel.main import SQLModelConfig

from events.envelope import as_utc
from events.recorded import Recorded
from events.spend import spend_of
from events.streams import RUN_PREFIX
from events.tables import table_of
from projections.forks import began, inherited_best
from projections.run_rows import Row, RunRowsProjector, Written, blank_row
from runstate.best import improves, ranked
from runstate.budget import STOP_TYPES, stood_stopped, wall_seconds

CURVE_TYPES = frozenset(
    {"run.started", "tool.returned", "experiment.scored", "paper.submitted", "model.responded"}
    | STOP_TYPES
)
"""The event types the curves fold."""


class CurveRunRow(SQLModel, table=True):
    """A run's running totals: what it had used by its last event so far."""

    __tablename__ = "curve_runs"

    run: str = Field(primary_key=True, max_length=200)
    task: str | None = Field(default=None, max_length=200)
    lab: str | None = Field(default=None, max_length=200)
    campaign: str | None = Field(default=None, max_length=200, index=True)
    started_at: datetime | None = Field(default=None, sa_column=Column(DateTime(timezone=True)))
    """When its wall time counts from: when its `run.started` occurred (else its first
    event folded here); a fork's earlier, by the wall time its trajectory had used at the
    fork point (`runstate.fork.rebase`)."""
    stopped_s: float = 0.0
    """Seconds it stood stopped so far (`runstate.budget.stood_stopped`), a fork's with
    its trajectory's."""
    stopped_at: datetime | None = Field(default=None, sa_column=Column(DateTime(timezone=True)))
    """When it was stopped, while it stands stopped."""
    attempts: int = 0
    """Scored attempts so far (a fork's own)."""
    compute_seconds: float = 0.0
    tokens: int = 0
    cost_usd: float = 0.0
    unknown_cost_calls: int = 0
    best_so_far: float | None = None
    papers: int = 0


class CurvePointFields(SQLModel):
    """A scored attempt with what its run had used by then: the columns of the
    curve_points table (`CurvePointRow`), which its rows are read back as (`CurvePoint`)."""

    position: int = Field(sa_column=Column(BigInteger, primary_key=True, autoincrement=False))
    """The log position of the `experiment.scored` event."""
    run: str = Field(max_length=200, index=True)
    task: str | None = Field(default=None, max_length=200)
    lab: str | None = Field(default=None, max_length=200)
    campaign: str | None = Field(default=None, max_length=200, index=True)
    attempt: int
    at: datetime = Field(sa_column=Column(DateTime(timezone=True), nullable=False))
    elapsed_s: float
    """Wall time the run had used at the scoring (`runstate.budget.wall_seconds`)."""
    tokens: int
    """Model tokens the run had used (its calls and gradings, this grading included)."""
    cost_usd: float
    """Dollars the run had spent, at known prices."""
    unknown_cost_calls: int = 0
    """Answered calls and model-using gradings so far whose cost is unknown (in no
    dollar total: `cost_usd` is then a lower bound)."""
    compute_seconds: float
    """Tool seconds the run had used, the graded call included."""
    score: float
    normalized_score: float | None = None
    best_so_far: float
    """The run's best normalized score up to this attempt (a fork's counts its parent's
    attempts); for attempts scored without one, the best raw score in its direction
    (`runstate.best`)."""


class CurvePointRow(CurvePointFields, table=True):
    """The curve_points table: one scored attempt on the efficiency curves."""

    __tablename__ = "curve_points"


class CurvePaperFields(SQLModel):
    """A paper with its place in its campaign and its run's best score when submitted:
    the columns of the curve_papers table (`CurvePaperRow`), which its rows are read back
    as (`PaperPoint`)."""

    position: int = Field(sa_column=Column(BigInteger, primary_key=True, autoincrement=False))
    """The log position of the `paper.submitted` event."""
    paper_id: str = Field(max_length=80)
    campaign: str | None = Field(default=None, max_length=200, index=True)
    paper_index: int
    """1 for the campaign's first paper, in submission (log) order."""
    run: str = Field(max_length=200)
    task: str | None = Field(default=None, max_length=200)
    lab: str | None = Field(default=None, max_length=200)
    at: datetime = Field(sa_column=Column(DateTime(timezone=True), nullable=False))
    elapsed_s: float
    """Wall time the submitting run had used (`runstate.budget.wall_seconds`)."""
    attempts: int
    """Scored attempts of the submitting run so far (a fork's own)."""
    best_so_far: float | None = None
    """The submitting run's best score when it submitted (a fork's counts its parent's
    attempts); None if nothing was scored."""


class CurvePaperRow(CurvePaperFields, table=True):
    """The curve_papers table: one paper on the AgentRxiv curve."""

    __tablename__ = "curve_papers"


CURVE_RUNS = table_of(CurveRunRow)
CURVE_POINTS = table_of(CurvePointRow)
CURVE_PAPERS = table_of(CurvePaperRow)
_RUN_COLUMNS = [c.name for c in CURVE_RUNS.c]


class CurvesProjector(RunRowsProjector[list[Recorded], str]):
    """Folds run streams into curve points, paper points and running totals (the rows
    carried from page to page: `projections.run_rows`)."""

    name = "curves"
    version = 4
    """2: compute seconds leave out an agent's reported calls (as the ledger does).
    3: elapsed time leaves out the time stood stopped (`run.interrupted`).
    4: a fork's elapsed time and best so far go on from the trajectory it stands on."""
    cost = 2.5
    table = CURVE_RUNS
    tables = (CURVE_RUNS, CURVE_POINTS, CURVE_PAPERS)
    aware = ("started_at", "stopped_at")

    def group(
        self, conn: Connection, events: Sequence[Recorded]
    ) -> tuple[list[Recorded], set[str]] | None:
        """The events of runs the curves fold, and their runs."""
        relevant = [e for e in events if e.type in CURVE_TYPES and e.stream.startswith(RUN_PREFIX)]
        if not relevant:
            return None
        return relevant, {e.stream for e in relevant}

    def fold(self, conn: Connection, page: list[Recorded], stored: dict[str, Row]) -> Written:
        """The runs' totals, and the new points and papers, folded in log order."""
        relevant, runs = page, stored
        campaigns = {e.correlation_id for e in relevant if e.type == "paper.submitted"}
        indexes = _paper_counts(conn, campaigns)
        points: list[dict[str, Any]] = []
        papers: list[dict[str, Any]] = []
        for event in relevant:
            run = runs.get(event.stream)
            if run is None:  # not setdefault: that built a new row for every event
                run = runs[event.stream] = _new_run(event)
            kind = event.type
            if run["stopped_at"] is not None or kind == "run.interrupted":
                run["stopped_s"], run["stopped_at"] = stood_stopped(
                    run["stopped_s"], run["stopped_at"], kind, event.occurred_at
                )
            if kind in STOP_TYPES:
                continue
            if kind == "tool.returned":
                if not event.payload.get("reported"):
                    run["compute_seconds"] += event.payload["duration_s"]
            elif kind == "experiment.scored":
                _spend(run, event)
                points.append(_score(run, event))
            elif kind == "model.responded":
                _spend(run, event)
            elif kind == "run.started":
                _start(conn, run, event)
            else:  # paper.submitted
                indexes[event.correlation_id] = indexes.get(event.correlation_id, 0) + 1
                papers.append(_paper(run, event, indexes[event.correlation_id]))
        return [(CURVE_RUNS, list(runs.values())), (CURVE_POINTS, points), (CURVE_PAPERS, papers)]


def _paper_counts(conn: Connection, campaigns: set[str | None]) -> dict[str | None, int]:
    """Papers already numbered in each of `campaigns` (None: papers of no campaign)."""
    if not campaigns:
        return {}
    named = sorted(c for c in campaigns if c is not None)
    where = or_(CURVE_PAPERS.c.campaign.in_(named), CURVE_PAPERS.c.campaign.is_(None))
    query = select(CURVE_PAPERS.c.campaign, func.count()).where(where)
    return dict(conn.execute(query.group_by(CURVE_PAPERS.c.campaign)).all())


_BLANK_RUN = blank_row(CurveRunRow)


def _new_run(event: Recorded) -> dict[str, Any]:
    run = _BLANK_RUN.copy()
    run["run"], run["campaign"], run["started_at"] = (
        event.stream,
        event.correlation_id,
        event.occurred_at,
    )
    return run


def _start(conn: Connection, run: dict[str, Any], event: Recorded) -> None:
    """A run's start; a fork's goes on from the trajectory it stands on (its wall time
    and best so far: `projections.forks`)."""
    run["task"], run["lab"] = event.payload["task"], event.payload["lab"]
    run["started_at"] = event.occurred_at
    if event.version != 0 or not event.payload.get("forked_from"):
        return
    state = began(conn, event)
    if state is not None:
        run["started_at"] = state.started_at
        run["stopped_s"] += state.stopped_s
    best = inherited_best(conn, event, None)
    run["best_so_far"] = None if best is None else best[0]


def _spend(run: dict[str, Any], event: Recorded) -> None:
    """Add what a model answer or a model-using grading spent to the run's totals."""
    spent = spend_of(event.type, event.payload)
    if spent is not None:
        run["tokens"] += spent.tokens
        run["cost_usd"] += spent.dollars
        run["unknown_cost_calls"] += spent.unknown_cost


def _elapsed(run: dict[str, Any], event: Recorded) -> float:
    """The wall time the run had used at `event` (`runstate.budget.wall_seconds`)."""
    return wall_seconds(run["started_at"], run["stopped_s"], run["stopped_at"], event.occurred_at)


def _score(run: dict[str, Any], event: Recorded) -> dict[str, Any]:
    payload = event.payload
    value, way = ranked(payload)
    if improves(way, value, run["best_so_far"]):
        run["best_so_far"] = value
    run["attempts"] += 1
    return {
        "position": event.position,
        "run": run["run"],
        "task": run["task"],
        "lab": run["lab"],
        "campaign": run["campaign"],
        "attempt": payload["attempt"],
        "at": event.occurred_at,
        "elapsed_s": _elapsed(run, event),
        "tokens": run["tokens"],
        "cost_usd": run["cost_usd"],
        "unknown_cost_calls": run["unknown_cost_calls"],
        "compute_seconds": run["compute_seconds"],
        "score": payload["score"],
        "normalized_score": payload.get("normalized_score"),
        "best_so_far": run["best_so_far"],
    }


def _paper(run: dict[str, Any], event: Recorded, index: int) -> dict[str, Any]:
    run["papers"] += 1
    return {
        "position": event.position,
        "paper_id": event.payload["paper_id"],
        "campaign": event.correlation_id,
        "paper_index": index,
        "run": run["run"],
        "task": event.payload["task"],
        "lab": run["lab"] or event.actor,
        "at": event.occurred_at,
        "elapsed_s": _elapsed(run, event),
        "attempts": run["attempts"],
        "best_so_far": run["best_so_far"],
    }


# -- reading -------------------------------------------------------------------


class CurvePoint(CurvePointFields):
    """A scored attempt with what its run had used by then, as read."""

    model_config = SQLModelConfig(frozen=True)


class PaperPoint(CurvePaperFields):
    """A paper on the AgentRxiv curve, as read."""

    model_config = SQLModelConfig(frozen=True)


Point = TypeVar("Point", CurvePoint, PaperPoint)


def renamed(points: Iterable[Point], names: Mapping[str, str]) -> list[Point]:
    """`points` with each one's campaign called what `names` calls it (its id where
    `names` has none), as plots label their lines."""
    return [
        p.model_copy(update={"campaign": names.get(p.campaign or "", p.campaign)}) for p in points
    ]


def curve_points(
    conn: Connection, campaign: str | None = None, runs: Sequence[str] | None = None
) -> list[CurvePoint]:
    """Every scored attempt (of one campaign, and of some runs, if given), in log order."""
    return [CurvePoint(**row) for row in _rows(conn, CURVE_POINTS, campaign, runs)]


def paper_points(conn: Connection, campaign: str | None = None) -> list[PaperPoint]:
    """Every submitted paper (of one campaign, if given), in log order."""
    return [PaperPoint(**row) for row in _rows(conn, CURVE_PAPERS, campaign)]


def _rows(
    conn: Connection, table: Table, campaign: str | None, runs: Sequence[str] | None = None
) -> list[dict[str, Any]]:
    """The rows of `table` (of one campaign, and of some runs, if given) in log order,
    `at` in UTC."""
    query = select(table).order_by(table.c.position)
    if campaign is not None:
        query = query.where(table.c.campaign == campaign)
    if runs is not None:
        query = query.where(table.c.run.in_(list(runs)))
    return [{**row, "at": as_utc(row["at"])} for row in conn.execute(query).mappings()]
