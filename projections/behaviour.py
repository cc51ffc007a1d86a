"""The behaviour read model: one row per run, its headline figures as columns and its
streaming tally (`analysis.tally`) as JSON, from which `behaviours_of` gives every figure
of docs/analysis.md ("Behaviour") exactly as `analysis.behaviour.behaviour` computes them
from the log.

The row keeps the tally, not the finished figures: the tally is what the run's next page
needs, it costs a few µs a run to write, and turning it into figures (`result()`: bins,
quantiles, thirds) cost ~160 µs a run, more than the whole rebuild may spend on a short
run's events (bench/rebuild.py: 20 µs an event for every read model together). Figures
are made when they are read, for the runs asked about. The columns are what a query or a
dashboard wants without parsing JSON; every one is a function of the tally.

Rebuilt equals incremental: a tally saved after any event and loaded a page later goes
on exactly as one that was never saved (`analysis.tally_state`), so the row is the same
whatever the pages.
"""

from collections.abc import KeysView, Sequence
from typing import Any

import orjson
from sqlalchemy import BigInteger, Column, Connection, select
from sqlmodel import Field, SQLModel

from analysis.figures import Behaviour
from analysis.tally import BehaviourTally
from analysis.tally_state import state_of, tally_from
from events.recorded import Recorded
from events.tables import table_of
from projections.run_rows import Row, RunRowsProjector, Written, by_run


class BehaviourRow(SQLModel, table=True):
    """A run's behaviour so far."""

    __tablename__ = "behaviour_runs"

    run: str = Field(primary_key=True, max_length=200)
    campaign: str | None = Field(default=None, max_length=200, index=True)
    """The correlation id of the run's `run.started`."""
    task: str | None = Field(default=None, max_length=200)
    lab: str | None = Field(default=None, max_length=200)
    policy: str | None = Field(default=None, max_length=200)
    finished: str | None = Field(default=None, max_length=40)
    """The `run.finished` reason; None while the run is running."""
    started_position: int = Field(sa_column=Column(BigInteger, nullable=False))
    """The log position of its `run.started`."""
    finished_position: int | None = Field(default=None, sa_column=Column(BigInteger))
    """The log position of its `run.finished`."""
    last_position: int = Field(sa_column=Column(BigInteger, nullable=False))
    events: int
    steps: int
    """Lab steps, step 0 included (`labrxiv replay` numbering)."""
    actions: int
    """Tool calls that are actions (`events.actions`)."""
    papers: int
    scored: int
    best: float | None = None
    """The best normalized score."""
    duration_s: float
    """Wall time the run used to its last event (`runstate.budget.wall_seconds`)."""
    tokens: int
    reasoning_tokens: int
    dollars: float
    """Known costs only."""
    unknown_cost: int
    tally: str
    """The run's `BehaviourTally` as JSON (`analysis.tally_state`)."""


BEHAVIOUR = table_of(BehaviourRow)


class BehaviourProjector(RunRowsProjector[dict[str, list[Recorded]], str]):
    """Folds every `run-*` stream into its tally, one row per run (`projections.run_rows`)."""

    name = "behaviour"
    version = 5
    """2: a fork's steps are numbered on from the steps it inherits, as `replay` numbers them.
    3: of attempts whose normalized scores tie, the best is the best raw one
    (`runstate.best.outranks`); the tally keeps its raw score.
    4: actions are counted through `events.actions` (an agent's reported call named as a
    lab call is not counted beside the lab call).
    5: times leave out the time the run stood stopped (`runstate.budget.wall_seconds`),
    and a stop (`run.interrupted`) closes the step it follows, as the trajectory cuts it."""
    cost = 2.3
    table = BEHAVIOUR
    tables = (BEHAVIOUR,)
    kept = ("run", "tally", "started_position", "finished_position")

    def group(
        self, conn: Connection, events: Sequence[Recorded]
    ) -> tuple[dict[str, list[Recorded]], KeysView[str]] | None:
        """The page's events by run."""
        runs = by_run(events)
        return (runs, runs.keys()) if runs else None

    def fold(
        self, conn: Connection, page: dict[str, list[Recorded]], stored: dict[str, Row]
    ) -> Written:
        """Add each run's events to its tally. A stream that does not begin with
        `run.started` has no tally and no row (the tally refuses it; `analysis.streaming`
        skips it too)."""
        rows = []
        for run, group in page.items():
            row = stored.get(run)
            if row is not None:
                tally = tally_from(run, orjson.loads(row["tally"]))
                started, finished = row["started_position"], row["finished_position"]
            elif group[0].version == 0 and group[0].type == "run.started":
                tally, started, finished = BehaviourTally(run), group[0].position, None
            else:
                continue
            for event in group:
                tally.add(event)
                if finished is None and event.type == "run.finished":
                    finished = event.position
            rows.append(_row(tally, started, finished, group[-1].position))
        return [(BEHAVIOUR, rows)]


def _row(tally: BehaviourTally, started: int, finished: int | None, last: int) -> dict[str, Any]:
    assert tally.started_at is not None and tally.last_at is not None
    spend = tally.spend
    return {
        "run": tally.run,
        "campaign": tally.campaign,
        "task": tally.started.get("task"),
        "lab": tally.started.get("lab"),
        "policy": tally.started.get("policy"),
        "finished": tally.finished,
        "started_position": started,
        "finished_position": finished,
        "last_position": last,
        "events": tally.events,
        "steps": tally.step + 1 - tally.first_step,  # a fork's own, as the figure counts
        "actions": len(tally.action_s),
        "papers": tally.papers,
        "scored": tally.scored,
        "best": tally.best,
        "duration_s": tally.duration_s(),
        "tokens": spend.tokens,
        "reasoning_tokens": spend.reasoning_tokens,
        "dollars": spend.dollars,
        "unknown_cost": spend.unknown_cost,
        "tally": orjson.dumps(state_of(tally)).decode(),
    }


# -- reading -----------------------------------------------------------------------


def behaviours_of(
    conn: Connection, run: str | None = None, campaign: str | None = None
) -> list[Behaviour]:
    """The behaviour figures of one run, or of a campaign's runs, as far as the read model
    has applied the log; in the order `analysis.streaming.behaviours` gives them (finished
    runs by when they finished, then the running ones by when they started), so sums over
    them add up in the same order as the analysis from the log."""
    c = BEHAVIOUR.c
    query = select(c.run, c.tally, c.started_position, c.finished_position)
    if run is not None:
        query = query.where(c.run == run)
    if campaign is not None:
        query = query.where(c.campaign == campaign)
    rows = sorted(
        conn.execute(query).mappings(),
        key=lambda r: (
            r["finished_position"] is None,
            r["finished_position"] or r["started_position"],
        ),
    )
    return [tally_from(r["run"], orjson.loads(r["tally"])).result() for r in rows]
