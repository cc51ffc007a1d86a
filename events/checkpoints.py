"""Checkpoints: how far a reader that tails the log by position (a projector, the reactor)
has got, one row a reader name, moved in the transaction that does the reader's work."""

from collections.abc import Sequence

from sqlalchemy import (
    BigInteger,
    Column,
    Connection,
    MetaData,
    String,
    Table,
    bindparam,
    select,
    update,
)

from events.upsert import insert_ignore


class Checkpoints:
    """A table of checkpoints by reader name, and the ways to read, claim and move them."""

    def __init__(self, name: str, metadata: MetaData) -> None:
        self.table = Table(
            name,
            metadata,
            Column("name", String(100), primary_key=True),
            Column("position", BigInteger, nullable=False),
        )
        # Statements built once: the reactor reads and moves its checkpoint at every
        # catch-up, and building a statement cost about as much as running it.
        c = self.table.c
        names = c.name.in_(bindparam("names", expanding=True))
        self._read = select(c.position).where(c.name == bindparam("name"))
        self._read_many = select(c.name, c.position).where(names)
        self._claim = select(c.name, c.position).where(names).order_by(c.name).with_for_update()
        self._advance = (
            update(self.table)
            .where(names, c.position == bindparam("seen"))
            .values(position=bindparam("to"))
        )

    def read(self, conn: Connection, name: str) -> int:
        """The last position reader `name` has done (0 when it has done none)."""
        return int(conn.execute(self._read, {"name": name}).scalar() or 0)

    def read_many(self, conn: Connection, names: Sequence[str]) -> dict[str, int]:
        """The stored checkpoints of those of `names` that have one."""
        return dict(conn.execute(self._read_many, {"names": sorted(names)}).all())

    def ensure(self, conn: Connection, names: Sequence[str]) -> None:
        """Create a checkpoint at 0 for each of `names` that has none, so `claim` has a
        row to lock (0 is what a missing checkpoint reads as: nothing done)."""
        rows = [{"name": name, "position": 0} for name in sorted(names)]
        conn.execute(insert_ignore(conn, self.table).values(rows))

    def claim(self, conn: Connection, names: Sequence[str]) -> dict[str, int]:
        """Lock the checkpoints of `names` until the transaction ends and return them (a
        name with no checkpoint row is left out: see `ensure`).

        Taken before a page is worked on, so two processes running the same reader do
        pages one after the other and the second sees the first's checkpoint. Without it
        the second folded a page over rows it could not see yet (PostgreSQL: duplicate
        key on `runs`) or turned a stale read into a write (SQLite: database is locked),
        and the process died. SQLite needs the transaction begun IMMEDIATE
        (`events.engines.WRITER_OPTIONS`); PostgreSQL locks the rows (FOR UPDATE), in name
        order, so processes that run overlapping sets of readers never wait in a cycle.
        """
        return dict(conn.execute(self._claim, {"names": sorted(names)}).all())

    def advance(self, conn: Connection, names: Sequence[str], seen: int, to: int) -> bool:
        """Move the checkpoints of `names` from `seen` to `to`; False if one was not at `seen`.

        The caller rolls back on False: the page was already done by another process
        ("already tracked" is "already done").
        """
        result = conn.execute(self._advance, {"names": sorted(names), "seen": seen, "to": to})
        return result.rowcount == len(set(names))
