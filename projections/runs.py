"""The runs read model: one row per run stream (status, counts, first/last event time)."""

from collections.abc import Sequence
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
    attempts: int = 0
    """Scored experiments so far."""
    best_score: float | None = None
    """Best normalized score so far (raw score when the task has no SOTA)."""
    first_event_at: datetime | None = None
    last_event_at: datetime | None = None
    last_position: int = 0


RUNS = RunRow.__table__
_COLUMNS = [c.name for c in RUNS.c]


class RunsProjector(Projector):
    """Folds every `run-*` stream into one `runs` row."""

    name = "runs"
    tables = (RUNS,)

    def apply(self, conn: Connection, events: Sequence[Recorded]) -> None:
        """Load the touched rows, fold the page into them, write them back."""
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
        "attempts": 0,
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
    if event.type == "run.started":
        row["task"], row["lab"], row["policy"] = payload["task"], payload["lab"], payload["policy"]
    elif event.type == "run.finished":
        row["status"], row["finish_reason"] = "finished", payload["reason"]
    elif event.type == "experiment.scored":
        row["attempts"] += 1
        score = payload.get("normalized_score")
        score = payload["score"] if score is None else score
        if row["best_score"] is None or score > row["best_score"]:
            row["best_score"] = score
