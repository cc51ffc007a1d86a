"""What a fork stands on, read on a read model's connection: its parent's events up to
the fork point, typed (`runstate.fork.Load`), and what the read models take of them as the
fork's folded state does (its wall time's start and stops, its best so far). They precede
the fork's `run.started` in the log, so a read model that reads them folds the same rows
rebuilt and incrementally."""

from collections.abc import Collection

from sqlalchemy import Connection, or_, select

from events.payloads import ExperimentScored
from events.payloads.experiment import Direction
from events.recorded import Recorded, TypedRecord
from events.store import EVENTS, rows_to_records
from runstate.best import best_ranked, ranked
from runstate.fork import Load, begin, inherited
from runstate.state import RunState

SCORED = ("experiment.scored",)
"""The event type of a scored attempt."""


def log_loader(conn: Connection, types: Collection[str] | None = None) -> Load:
    """A stream's typed events from version 0 up to a version, read on `conn`; given
    `types`, only its events of those types and its first (where a fork of a fork names
    what it stands on): what a read model that counts a few kinds of event needs, without
    validating the whole trajectory."""

    def load(stream: str, version: int) -> list[TypedRecord]:
        query = select(EVENTS).where(EVENTS.c.stream == stream, EVENTS.c.version <= version)
        if types is not None:
            query = query.where(or_(EVENTS.c.version == 0, EVENTS.c.type.in_(sorted(types))))
        rows = conn.execute(query.order_by(EVENTS.c.version))
        return [record.typed_record() for record in rows_to_records(rows)]

    return load


def began(conn: Connection, started: Recorded) -> RunState | None:
    """The state of the run whose first event is `started` as it begins (a fork's: its
    trajectory's at the fork point, `runstate.fork.begin`): where its wall time counts
    from and the time it stood stopped before. None for a log without the trajectory a
    fork names (it has its own time only)."""
    try:
        return begin(started.typed_record(), log_loader(conn))
    except ValueError:
        return None


def inherited_best(
    conn: Connection, started: Recorded, best: tuple[float, Direction] | None
) -> tuple[float, Direction] | None:
    """The best so far (`runstate.best.ranked`, with its direction) of `best` and the
    scored attempts of the trajectory the fork whose `run.started` is `started` stands on:
    the best its folded state has."""
    events = inherited(started.typed_record(), log_loader(conn, types=SCORED))
    scored = [
        ranked(e.payload.model_dump()) for e in events if isinstance(e.payload, ExperimentScored)
    ]
    return best_ranked([*([] if best is None else [best]), *scored])
