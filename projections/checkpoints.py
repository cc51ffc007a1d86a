"""Checkpoints: how far each projector has applied the log, kept beside its read model."""

from collections.abc import Sequence

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


def read_checkpoints(conn: Connection, names: Sequence[str]) -> dict[str, int]:
    """The stored checkpoints of those of `names` that have one."""
    query = select(CHECKPOINTS.c.name, CHECKPOINTS.c.position)
    return dict(conn.execute(query.where(CHECKPOINTS.c.name.in_(sorted(names)))).all())


def ensure_checkpoints(conn: Connection, names: Sequence[str]) -> None:
    """Create a checkpoint at 0 for each of `names` that has none, so `claim_checkpoints`
    has a row to lock (0 is what a missing checkpoint reads as: nothing applied)."""
    dialect_insert = pg_insert if conn.dialect.name == "postgresql" else sqlite_insert
    rows = [{"name": name, "position": 0} for name in sorted(names)]
    conn.execute(dialect_insert(CHECKPOINTS).values(rows).on_conflict_do_nothing())


def claim_checkpoints(conn: Connection, names: Sequence[str]) -> dict[str, int]:
    """Lock the checkpoints of `names` until the transaction ends and return them (a name
    with no checkpoint row is left out: see `ensure_checkpoints`).

    Taken before a page is applied, so two processes running the same projector
    apply pages one after the other and the second sees the first's checkpoint.
    Without it the second folded a page over rows it could not see yet (PostgreSQL:
    duplicate key on `runs`) or turned a stale read into a write (SQLite: database is
    locked), and the process died. SQLite needs the transaction begun IMMEDIATE
    (`events.engines.WRITER_OPTIONS`); PostgreSQL locks the rows (FOR UPDATE), in name
    order, so processes that run overlapping sets of projectors never wait in a cycle.
    """
    query = (
        select(CHECKPOINTS.c.name, CHECKPOINTS.c.position)
        .where(CHECKPOINTS.c.name.in_(sorted(names)))
        .order_by(CHECKPOINTS.c.name)
        .with_for_update()
    )
    return dict(conn.execute(query).all())


def advance_checkpoints(conn: Connection, names: Sequence[str], seen: int, to: int) -> bool:
    """Move the checkpoints of `names` from `seen` to `to`; False if one was not at `seen`.

    The caller rolls back on False: the page was already applied by another
    projector process ("already tracked" is "already done").
    """
    result = conn.execute(
        update(CHECKPOINTS)
        .where(CHECKPOINTS.c.name.in_(sorted(names)), CHECKPOINTS.c.position == seen)
        .values(position=to)
    )
    return result.rowcount == len(set(names))
