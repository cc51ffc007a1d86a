"""The runs read model: one row per run stream (status, counts, first/last event time).

It is what people and the campaign watcher look at to follow runs: `runs_of` reads it,
so no caller re-reads and re-folds run streams to show their progress.
"""

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Select, case, func, select
from sqlmodel import AutoString, Field, SQLModel
from sqlmodel.main import SQLModelConfig

from events.envelope import as_utc
from events.payloads import ExperimentScored, PaperSubmitted
from events.payloads.experiment import Direction
from events.recorded import Recorded
from events.store import EVENTS
from events.tables import table_of
from projections.forks import began, inherited_best, log_loader
from projections.run_rows import Row, RunRowsProjector, Written, blank_row, by_run
from runstate.best import improves, ranked
from runstate.budget import Span, seconds_together, stood_stopped, wall_seconds, worked
from runstate.fork import inherited


class RunFields(SQLModel):
    """A run as people look at it: the columns of the runs table (`RunRow`), which its
    rows are read back as (`RunView`)."""

    stream: str = Field(primary_key=True, max_length=200)
    """The run's stream, `run-<id>`."""
    task: str | None = None
    lab: str | None = None
    policy: str | None = None
    campaign: str | None = Field(default=None, max_length=200, index=True)
    """The campaign (correlation id) the run belongs to."""
    status: str = "running"
    """`running` until `run.finished`, then `finished`; `interrupted` from a
    `run.interrupted` (or, in a log written before runs recorded their stops, a
    `campaign.interrupted` naming the run after its last event) until its next event."""
    finish_reason: str | None = None
    """done, budget, error or cancelled."""
    event_count: int = 0
    steps: int = 0
    """Tool calls the lab asked for (`tool.invoked`): the steps a steps budget counts. An
    agent's reported calls are not (its own tools ran them: `runstate.fold`)."""
    attempts: int = 0
    """Scored experiments so far."""
    papers: int = 0
    """Papers the lab submitted (`paper.submitted`), revisions included."""
    revisions: int = 0
    """Of `papers`, those that revise an earlier one after its review (`revises` set):
    written beyond the papers a lab was asked for."""
    best_score: float | None = None
    """Best normalized score so far; for attempts scored without one, the best raw score
    in its direction (`runstate.best`). A fork's counts the attempts of the trajectory it
    stands on, as its folded state does."""
    best_direction: Direction | None = Field(default=None, sa_type=AutoString)
    """The direction `best_score` ranks in: `maximize` for a normalized score, else its
    metric's. Bests of several runs are compared in it (`runstate.best.best_ranked`)."""
    first_event_at: datetime | None = None
    """When the run started (its first event occurred)."""
    wall_started_at: datetime | None = None
    """When the run's wall time counts from: its start; a fork's earlier, by the time its
    trajectory had used at the fork point (`runstate.fork.rebase`)."""
    stopped_seconds: float = 0.0
    """Seconds the run stood stopped, from each `run.interrupted` to its next event (a
    fork's with its trajectory's, as `runstate.state.RunState.stopped_s`)."""
    stopped_at: datetime | None = None
    """When the run was stopped (`run.interrupted`), while no event has followed."""
    last_event_at: datetime | None = None
    last_position: int = 0
    forked_from: str | None = Field(default=None, max_length=200)
    """For a fork (`labrxiv fork`): the parent run; the counts here are the fork's own
    events, after the parent's it inherits (`inherited_attempts`, `inherited_papers`);
    its best score and wall time are its trajectory's."""
    fork_step: int | None = None
    """The parent's last step the fork inherits."""
    inherited_attempts: int = 0
    """For a fork: the scored attempts of the trajectory it stands on (its parent's up
    to the fork point, with theirs for a fork of a fork). Its budget counts them."""
    inherited_papers: int = 0
    """For a fork: the papers of the trajectory it stands on, as `inherited_attempts`,
    revisions not counted (they are written beyond the papers asked for)."""
    inherited_steps: int = 0
    """For a fork: the steps of the trajectory it stands on, as its folded state counts
    them at the fork point (`runstate.fork.begin`). Its steps budget counts them."""
    inherited_tokens: int = 0
    """For a fork: the model tokens the trajectory it stands on spent (`events.spend`, as
    `inherited_steps`). Its tokens budget counts them."""
    inherited_dollars: float = 0.0
    """For a fork: the known dollars the trajectory it stands on spent (as
    `inherited_tokens`). Its dollars budget counts them."""


class RunRow(RunFields, table=True):
    """The runs table."""

    __tablename__ = "runs"


RUNS = table_of(RunRow)


class RunView(RunFields):
    """One row of the runs read model, typed, with aware timestamps."""

    model_config = SQLModelConfig(frozen=True)

    @property
    def finished(self) -> bool:
        """Whether the run's `run.finished` has been applied."""
        return self.status == "finished"

    @property
    def elapsed_seconds(self) -> float:
        """Seconds from the run's first event to its latest one."""
        if self.first_event_at is None or self.last_event_at is None:
            return 0.0
        return (self.last_event_at - self.first_event_at).total_seconds()

    @property
    def wall_seconds(self) -> float:
        """The wall time the run used to its latest event (`wall_used_to_last`)."""
        return wall_used_to_last(
            self.wall_started_at, self.stopped_seconds, self.stopped_at, self.last_event_at
        )


def wall_used_to_last(
    wall_started_at: datetime | None,
    stopped_seconds: float,
    stopped_at: datetime | None,
    last_event_at: datetime | None,
) -> float:
    """The wall time a run's row says it used, to its latest event (a read model keeps no
    clock), as its wall-time limit counts it (`runstate.budget.wall_seconds`: the time it
    stood stopped left out, a fork's going on from its parent's); 0 before any event.
    The times as the row holds them (naive from SQLite)."""
    if wall_started_at is None or last_event_at is None:
        return 0.0
    stopped = None if stopped_at is None else as_utc(stopped_at)
    return wall_seconds(as_utc(wall_started_at), stopped_seconds, stopped, as_utc(last_event_at))


def best_directions(conn: Connection, campaigns: Iterable[str | None]) -> dict[str, Direction]:
    """By run of `campaigns` (None: every run), the direction its best score ranks in,
    for the runs that have one: what the plots rank a line's best so far by."""
    return {
        run.stream: run.best_direction
        for campaign in campaigns
        for run in runs_of(conn, campaign=campaign)
        if run.best_direction is not None
    }


def runs_of(
    conn: Connection,
    streams: Sequence[str] | None = None,
    campaign: str | None = None,
    offset: int = 0,
    limit: int | None = None,
) -> list[RunView]:
    """The runs read model's rows, in stream order: every run, or only those among
    `streams` and/or of `campaign`; from `offset`, at most `limit` of them.

    A run appears once its first event has been projected; the rows are as fresh as the
    runs projector's checkpoint (the caller catches it up when it must be current)."""
    query = _rows_of(streams, campaign)
    query = query.offset(offset) if offset else query
    query = query.limit(limit) if limit is not None else query
    return [_view(row) for row in conn.execute(query).mappings()]


def _rows_of(streams: Sequence[str] | None, campaign: str | None) -> Select[Any]:
    """The rows `runs_of` reads, in stream order."""
    query = select(RUNS).order_by(RUNS.c.stream)
    if streams is not None:
        query = query.where(RUNS.c.stream.in_(list(streams)))
    if campaign is not None:
        query = query.where(RUNS.c.campaign == campaign)
    return query


class CampaignRuns:
    """The runs read model's rows of one campaign, as `runs_of` gives them, for a reader
    that reads them again and again (the campaign watcher, four times a second): each
    read takes every row, and types again only the rows that differ from the last read."""

    def __init__(self, campaign: str) -> None:
        self.campaign = campaign
        self._query = _rows_of(None, campaign)
        self._seen: dict[str, tuple[tuple[Any, ...], RunView]] = {}

    def read(self, conn: Connection) -> list[RunView]:
        """The campaign's rows now, in stream order."""
        seen: dict[str, tuple[tuple[Any, ...], RunView]] = {}
        for row in conn.execute(self._query):
            values = tuple(row)
            kept = self._seen.get(row.stream)
            seen[row.stream] = kept if kept and kept[0] == values else (values, _view(row._mapping))
        self._seen = seen
        return [view for _, view in seen.values()]


def runs_to_watch(conn: Connection, limit: int) -> list[RunView]:
    """At most `limit` runs of the runs read model: running ones first, then the most
    recent (by their last event's position), then by stream."""
    query = (
        select(RUNS)
        .order_by(
            case((RUNS.c.status == "running", 0), else_=1),
            RUNS.c.last_position.desc(),
            RUNS.c.stream,
        )
        .limit(limit)
    )
    return [_view(row) for row in conn.execute(query).mappings()]


def count_runs(conn: Connection, campaign: str | None = None) -> int:
    """How many runs `runs_of` lists (of `campaign`, if given)."""
    query = select(func.count()).select_from(RUNS)
    if campaign is not None:
        query = query.where(RUNS.c.campaign == campaign)
    return int(conn.execute(query).scalar_one())


def campaign_wall_seconds(conn: Connection, campaign: str) -> float:
    """The wall time the runs of `campaign` used together, to their latest events: the
    seconds in which at least one of them worked (`runstate.budget.seconds_together`),
    the time each stood stopped left out as its wall-time limit leaves it out. A fork
    counts from its own start here: the time its parent used is its parent's campaign's."""
    query = select(RUNS.c.stream, RUNS.c.first_event_at, RUNS.c.last_event_at)
    runs = {
        stream: (as_utc(first), as_utc(last))
        for stream, first, last in conn.execute(query.where(RUNS.c.campaign == campaign))
        if first is not None and last is not None
    }
    stops: dict[str, list[Span]] = {stream: [] for stream in runs}
    interrupted = select(EVENTS.c.stream, EVENTS.c.version, EVENTS.c.occurred_at).where(
        EVENTS.c.stream.in_(sorted(runs)), EVENTS.c.type == "run.interrupted"
    )
    for stream, version, at in conn.execute(interrupted):
        ended = conn.execute(
            select(func.min(EVENTS.c.occurred_at)).where(
                EVENTS.c.stream == stream,
                EVENTS.c.version > version,
                EVENTS.c.type != "run.interrupted",
            )
        ).scalar_one()
        stops[stream].append((as_utc(at), runs[stream][1] if ended is None else as_utc(ended)))
    return seconds_together(
        span
        for stream, (first, last) in runs.items()
        for span in worked(first, last, stops[stream])
    )


def _view(row: Any) -> RunView:
    values = dict(row)
    for key in _TIMES:  # SQLite reads back naive
        if values[key] is not None:
            values[key] = as_utc(values[key])
    return RunView(**values)


_TIMES = ("first_event_at", "last_event_at", "wall_started_at", "stopped_at")
"""The time columns of a row."""

_Page = tuple[dict[str, list[Recorded]], list[Recorded]]
"""A page's events by run, and its `campaign.interrupted` events."""


class RunsProjector(RunRowsProjector[_Page, str]):
    """Folds every `run-*` stream into one `runs` row (`projections.run_rows`)."""

    name = "runs"
    version = 6
    """2: a fork's inherited attempts and papers, and revisions, are counted.
    3: an agent's reported tool calls are no steps (`runstate.fold`).
    4: the wall time's start and the time stood stopped (`run.interrupted`) are kept.
    5: a fork's best score counts the attempts of the trajectory it stands on.
    6: a fork's inherited steps, tokens and dollars are kept."""
    cost = 1.2
    table = RUNS
    tables = (RUNS,)
    aware = _TIMES

    def group(self, conn: Connection, events: Sequence[Recorded]) -> tuple[_Page, set[str]] | None:
        """The page's runs, and the interrupts that name runs, with or without events here."""
        others: list[Recorded] = []
        by_stream = by_run(events, others)
        interrupts = [event for event in others if event.type == "campaign.interrupted"]
        if not by_stream and not interrupts:
            return None
        named = {stream for event in interrupts for stream in event.payload["runs"]}
        return (by_stream, interrupts), by_stream.keys() | named

    def fold(self, conn: Connection, page: _Page, stored: dict[str, Row]) -> Written:
        """Each run's events, then the interrupts, into the rows."""
        by_stream, interrupts = page
        rows = stored
        for stream, group in by_stream.items():
            row = rows.get(stream)
            if row is None:
                row = rows[stream] = _new_row(stream)
            _fold(row, group)
            if group[0].version == 0 and row["forked_from"] is not None:
                _inherited(conn, group[0], row)
        for event in interrupts:  # after the runs' own events: a later one means running
            for stream in event.payload["runs"]:
                row = rows.get(stream)
                if row and row["status"] == "running" and row["last_position"] < event.position:
                    row["status"] = "interrupted"
        return [(RUNS, list(rows.values()))]


def _inherited(conn: Connection, started: Recorded, row: dict[str, Any]) -> None:
    """What the trajectory a fork whose `run.started` is `started` stands on gives its
    row, as the fork's folded state has them (`runstate.fork.begin`): its scored attempts
    and papers (not revisions, `runstate.fork.inherited`), its best score, its wall
    time's start and time stood stopped, and its steps, tokens and dollars. Read from the
    log, which holds them before the fork's start: rebuilt equals incremental. Forks are
    rare, and this runs once at each one's start."""
    state = began(conn, started)
    if state is not None:
        row["wall_started_at"] = state.started_at
        row["stopped_seconds"] += state.stopped_s
        row["inherited_steps"] = state.steps
        row["inherited_tokens"] = state.spend.tokens
        row["inherited_dollars"] = state.spend.dollars
    counted = ("experiment.scored", "paper.submitted")
    events = inherited(started.typed_record(), log_loader(conn, types=counted))
    attempts = sum(isinstance(e.payload, ExperimentScored) for e in events)
    papers = sum(isinstance(e.payload, PaperSubmitted) and not e.payload.revises for e in events)
    row["inherited_attempts"], row["inherited_papers"] = attempts, papers
    held = None if row["best_score"] is None else (row["best_score"], row["best_direction"])
    best = inherited_best(conn, started, held)
    if best is not None:
        row["best_score"], row["best_direction"] = best


_BLANK = blank_row(RunRow)


def _new_row(stream: str) -> dict[str, Any]:
    row = _BLANK.copy()
    row["stream"] = stream
    return row


def _fold(row: dict[str, Any], events: list[Recorded]) -> None:
    """Fold one run's events of a page (in log order) into its row.

    A run at a time, not an event at a time: the counts and latest values are set once a
    page, and only the types that count are looked at one by one."""
    first, last = events[0], events[-1]
    if row["status"] == "interrupted":  # resumed: its next event is in the log
        row["status"] = "running"
    if last.type == "run.interrupted":
        row["status"] = "interrupted"
    row["event_count"] += len(events)
    if row["first_event_at"] is None:
        row["first_event_at"] = row["wall_started_at"] = first.occurred_at
    row["last_event_at"], row["last_position"] = last.occurred_at, last.position
    if not row["campaign"]:  # the first campaign the run's events name
        named = [e.correlation_id for e in events if e.correlation_id]
        if named:
            row["campaign"] = named[0]
    for event in events:
        kind = event.type
        if row["stopped_at"] is not None or kind == "run.interrupted":
            row["stopped_seconds"], row["stopped_at"] = stood_stopped(
                row["stopped_seconds"], row["stopped_at"], kind, event.occurred_at
            )
        if kind == "tool.invoked":
            row["steps"] += not event.payload.get("reported")
        elif kind == "experiment.scored":
            row["attempts"] += 1
            score, way = ranked(event.payload)
            if improves(way, score, row["best_score"]):
                row["best_score"], row["best_direction"] = score, way
        elif kind == "run.started":
            payload = event.payload
            row["task"], row["lab"], row["policy"] = (
                payload["task"],
                payload["lab"],
                payload["policy"],
            )
            point = payload.get("forked_from")
            if point:
                row["forked_from"], row["fork_step"] = point["run"], point["step"]
        elif kind == "run.finished":
            row["status"], row["finish_reason"] = "finished", event.payload["reason"]
        elif kind == "paper.submitted":
            row["papers"] += 1
            if event.payload.get("revises"):
                row["revisions"] += 1
