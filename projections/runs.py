"""The runs read model: one row per run stream (status, counts, first/last event time).

It is what people and the campaign watcher look at to follow runs: `runs_of` reads it,
so no caller re-reads and re-folds run streams to show their progress.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, delete, insert, select
from sqlmodel import Field, SQLModel

from events.envelope import as_utc
from events.recorded import Recorded
from projections.projector import Projector


class RunRow(SQLModel, table=True):
    """A run as people look at it."""

    __tablename__ = "runs"

    stream: str = Field(primary_key=True, max_length=200)
    """The run's stream, `run-<id>`."""
    task: str | None = None
    lab: str | None = None
    policy: str | None = None
    campaign: str | None = Field(default=None, max_length=200, index=True)
    """The campaign (correlation id) the run belongs to."""
    status: str = "running"
    """`running` until `run.finished`, then `finished`."""
    finish_reason: str | None = None
    """done, budget, error or cancelled."""
    event_count: int = 0
    steps: int = 0
    """Tool calls the lab asked for (`tool.invoked`): the steps a steps budget counts."""
    attempts: int = 0
    """Scored experiments so far."""
    papers: int = 0
    """Papers the lab submitted (`paper.submitted`)."""
    best_score: float | None = None
    """Best normalized score so far (raw score when the task has no SOTA)."""
    first_event_at: datetime | None = None
    """When the run started (its first event occurred)."""
    last_event_at: datetime | None = None
    last_position: int = 0


RUNS = RunRow.__table__
_COLUMNS = [c.name for c in RUNS.c]


@dataclass(frozen=True)
class RunView:
    """One row of the runs read model, typed, with aware timestamps."""

    stream: str
    task: str | None
    lab: str | None
    policy: str | None
    campaign: str | None
    status: str
    finish_reason: str | None
    event_count: int
    steps: int
    attempts: int
    papers: int
    best_score: float | None
    first_event_at: datetime | None
    last_event_at: datetime | None
    last_position: int

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


def runs_of(
    conn: Connection, streams: Sequence[str] | None = None, campaign: str | None = None
) -> list[RunView]:
    """The runs read model's rows, in stream order: every run, or only those among
    `streams` and/or of `campaign`.

    A run appears once its first event has been projected; the rows are as fresh as the
    runs projector's checkpoint (the caller catches it up when it must be current)."""
    query = select(RUNS).order_by(RUNS.c.stream)
    if streams is not None:
        query = query.where(RUNS.c.stream.in_(list(streams)))
    if campaign is not None:
        query = query.where(RUNS.c.campaign == campaign)
    return [_view(row) for row in conn.execute(query).mappings()]


def _view(row: Any) -> RunView:
    values = dict(row)
    for key in ("first_event_at", "last_event_at"):  # SQLite reads back naive
        if values[key] is not None:
            values[key] = as_utc(values[key])
    return RunView(**values)


class RunsProjector(Projector):
    """Folds every `run-*` stream into one `runs` row."""

    name = "runs"
    tables = (RUNS,)

    def apply(self, conn: Connection, events: Sequence[Recorded]) -> None:
        """Load the touched rows, fold the page into them, write them back.

        Every column is a count, a latest value or a running best, so folding a run's
        events in pages of any size gives the same row (`rebuild` must equal it)."""
        touched = sorted({e.stream for e in events if e.stream.startswith("run-")})
        if not touched:
            return
        rows = {
            row["stream"]: dict(row)
            for row in conn.execute(select(RUNS).where(RUNS.c.stream.in_(touched))).mappings()
        }
        for event in events:
            if event.stream.startswith("run-"):
                row = rows.get(event.stream)
                if row is None:  # not setdefault: that built a new row for every event
                    row = rows[event.stream] = _new_row(event.stream)
                _fold(row, event)
        for row in rows.values():  # once a row, not once an event: SQLite reads back naive
            for key in ("first_event_at", "last_event_at"):
                if row[key] is not None:
                    row[key] = as_utc(row[key])
        conn.execute(delete(RUNS).where(RUNS.c.stream.in_(touched)))
        conn.execute(insert(RUNS), [rows[s] for s in touched])


def _new_row(stream: str) -> dict[str, Any]:
    return {name: None for name in _COLUMNS} | {
        "stream": stream,
        "status": "running",
        "event_count": 0,
        "steps": 0,
        "attempts": 0,
        "papers": 0,
        "last_position": 0,
    }


def _fold(row: dict[str, Any], event: Recorded) -> None:
    payload = event.payload
    row["event_count"] += 1
    if row["first_event_at"] is None:
        row["first_event_at"] = event.occurred_at
    row["last_event_at"] = event.occurred_at
    row["last_position"] = event.position
    if event.correlation_id and not row["campaign"]:
        row["campaign"] = event.correlation_id
    if event.type == "tool.invoked":
        row["steps"] += 1
    elif event.type == "run.started":
        row["task"], row["lab"], row["policy"] = payload["task"], payload["lab"], payload["policy"]
    elif event.type == "run.finished":
        row["status"], row["finish_reason"] = "finished", payload["reason"]
    elif event.type == "experiment.scored":
        row["attempts"] += 1
        score = payload.get("normalized_score")
        score = payload["score"] if score is None else score
        if row["best_score"] is None or score > row["best_score"]:
            row["best_score"] = score
    elif event.type == "paper.submitted":
        row["papers"] += 1
