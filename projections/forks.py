"""What a fork stands on, read on a read model's connection: its parent's events up to
the fork point, typed (`runstate.fork.Load`). They precede the fork's `run.started` in the
log, so a read model that reads them folds the same rows rebuilt and incrementally."""

from collections.abc import Collection

from sqlalchemy import Connection, or_, select

from events.recorded import TypedRecord
from events.store import EVENTS, rows_to_records
from runstate.fork import Load


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
