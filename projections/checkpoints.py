"""Checkpoints: how far each projector has applied the log, kept beside its read model."""

from sqlalchemy import BigInteger, Column, Connection, String, Table, select, update
from sqlmodel import SQLModel

CHECKPOINTS = Table(
    "projection_checkpoints",
    SQLModel.metadata,
    Column("name", String(100), primary_key=True),
    Column("position", BigInteger, nullable=False),
)


def read_checkpoint(conn: Connection, name: str) -> int:
    """The last position applied by projector `name` (0 when it has applied none)."""
    value = conn.execute(select(CHECKPOINTS.c.position).where(CHECKPOINTS.c.name == name)).scalar()
    return int(value or 0)


def advance_checkpoint(conn: Connection, name: str, seen: int, to: int) -> bool:
    """Move `name` from `seen` to `to`; False if someone else moved it first.

    The caller rolls back on False: the page was already applied by another
    projector process ("already tracked" is "already done").
    """
    if seen == 0:
        row = conn.execute(select(CHECKPOINTS.c.position).where(CHECKPOINTS.c.name == name))
        if row.first() is None:
            conn.execute(CHECKPOINTS.insert().values(name=name, position=to))
            return True
    result = conn.execute(
        update(CHECKPOINTS)
        .where(CHECKPOINTS.c.name == name, CHECKPOINTS.c.position == seen)
        .values(position=to)
    )
    return result.rowcount == 1
