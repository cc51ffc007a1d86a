"""Checkpoints: how far each projector has applied the log, kept beside its read model."""

from sqlalchemy import BigInteger, Column, Connection, String, Table, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
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


def ensure_checkpoint(conn: Connection, name: str) -> None:
    """Create `name`'s checkpoint at 0 if it has none, so `claim_checkpoint` has a row to lock."""
    dialect_insert = pg_insert if conn.dialect.name == "postgresql" else sqlite_insert
    conn.execute(dialect_insert(CHECKPOINTS).values(name=name, position=0).on_conflict_do_nothing())


def claim_checkpoint(conn: Connection, name: str) -> int:
    """Lock `name`'s checkpoint until the transaction ends and return it.

    Taken before a page is applied, so two processes running the same projector
    apply pages one after the other and the second sees the first's checkpoint.
    Without it the second folded a page over rows it could not see yet (PostgreSQL:
    duplicate key on `runs`) or turned a stale read into a write (SQLite: database is
    locked), and the process died. SQLite needs the transaction begun IMMEDIATE
    (`events.engines.WRITER_OPTIONS`); PostgreSQL locks the row (FOR UPDATE).
    """
    query = select(CHECKPOINTS.c.position).where(CHECKPOINTS.c.name == name).with_for_update()
    return int(conn.execute(query).scalar() or 0)


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
