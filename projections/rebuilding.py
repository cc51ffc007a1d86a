"""Read models being rebuilt from position 0, and how far they must get to be whole.

A reset (`ProjectionRunner._reset`: a stale read model, or `labrxiv rebuild`) drops a read
model and marks it with the head of the log it must reach again. Until its checkpoint
gets there, what it holds is part of the log, not all of it: a read command that finds
the mark finishes the rebuild before it reads (`labrxiv.cli_common.read_runner`), where a
read model that is simply behind a projector (normal lag, `labrxiv status`) is read as it
is. Without the mark, a rebuild cut short (Ctrl-C in a long `labrxiv runs`, a projector
killed) left a half-built read model that the next read showed with no warning.
"""

from collections.abc import Iterable, Mapping

from sqlalchemy import BigInteger, Column, Connection, String, Table, delete, inspect, select
from sqlmodel import SQLModel

from events.upsert import upsert

REBUILDS = Table(
    "projection_rebuilds",
    SQLModel.metadata,
    Column("name", String(100), primary_key=True),
    # The head of the log when the read model was dropped: whole again once its
    # checkpoint is there.
    Column("until", BigInteger, nullable=False),
)


def mark_rebuilding(conn: Connection, name: str, until: int) -> None:
    """Mark read model `name` as rebuilt from 0 and whole only at position `until`."""
    conn.execute(upsert(conn, REBUILDS, {"name": name, "until": until}))


def rebuilding(conn: Connection, names: Iterable[str]) -> dict[str, int]:
    """The marks of those of `names` that have one, by name (none before the table exists)."""
    if not inspect(conn).has_table(REBUILDS.name):
        return {}
    query = select(REBUILDS.c.name, REBUILDS.c.until).where(REBUILDS.c.name.in_(sorted(names)))
    return dict(conn.execute(query).all())


def clear_rebuilt(
    conn: Connection, marks: Mapping[str, int], checkpoints: Mapping[str, int]
) -> None:
    """Remove the marks (as read: `marks`) of the read models whose checkpoint reached
    them; a mark moved since (a new reset) stays."""
    for name, until in sorted(marks.items()):
        if checkpoints.get(name, 0) >= until:
            conn.execute(delete(REBUILDS).where(REBUILDS.c.name == name, REBUILDS.c.until == until))
