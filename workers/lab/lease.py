"""Step leases: a run whose step is being taken says so, so the reaper leaves it alone.

The reaper sends a run's step again when the run has had no event for a while (its
step message was lost: Redis restarted empty, a worker killed). A step may rightly take
minutes (a grader has up to its card's `timeout_seconds`, a model call up to the
gateway's timeout), and sending it again while it runs would have two workers take
it at once. So a worker taking a step holds a lease on the run, renewed every third
of its time to live while the step runs; the reaper sends again only the steps of
runs with no live lease. A worker that dies stops renewing: its lease runs out within
`ttl` seconds, and the run is reaped. One upsert a step, one more per `ttl / 3` of a
long step; the lease is left to run out, not deleted (the run's next event says more).

A lease is also how one take of a step keeps a second one out. The same step can be
sent twice at once (a reaction sent again: a recorder killed between sending a run's
next step and moving the reactor's checkpoint, which the reactor then sends again), and
two workers took it together, running the same tools in the same workspace; the takes
could come out differently (two graders at once), which the log then had to sort out
(`events.store.Diverged`). A take gets the lease only if no other take holds the same
step's, or a later step's, live: the second finds it held and does nothing, also once
the first is done and its events are on their way to the recorder (the lease is left
to run out). A take that raises gives its lease back, so the task's retry of the step
(a transient fault, a wait) gets it at once.
"""

import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta

from sqlalchemy import BigInteger, Column, DateTime, MetaData, String, Table, delete, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from events import EventStore
from events.engines import WRITER_OPTIONS
from events.envelope import as_utc
from events.ids import utcnow
from workers.reactor import create_table

STEP_LEASES = Table(
    "step_leases",
    MetaData(),
    Column("stream", String(200), primary_key=True),
    Column("version", BigInteger, nullable=False),
    Column("expires_at", DateTime(timezone=True), nullable=False),
)
"""Per run: the step being taken (the version it follows) and until when it is held."""


class Leases:
    """Leases on runs' steps, in the log's database (shared by every worker)."""

    def __init__(self, store: EventStore, ttl: float = 30.0) -> None:
        self.store = store
        self.ttl = ttl
        self._ready = False

    @contextmanager
    def holding(self, stream: str, version: int) -> Iterator[bool]:
        """Hold the lease on `stream`'s step after `version` while the block runs; the
        block gets False (and nothing is held) when another take of the step, or of a later
        one, holds it live."""
        if not self._take(stream, version):
            yield False
            return
        done = threading.Event()

        def renew() -> None:
            while not done.wait(self.ttl / 3):
                self._renew(stream, version)

        renewer = threading.Thread(target=renew, name=f"lease {stream}", daemon=True)
        renewer.start()
        try:
            yield True
        except BaseException:
            done.set()
            renewer.join(timeout=self.ttl)
            self.give_back(stream, version)
            raise
        finally:
            done.set()
            renewer.join(timeout=self.ttl)

    def live(self, streams: Iterable[str], now: datetime | None = None) -> dict[str, int]:
        """The runs among `streams` whose step is held now: stream → the version it follows."""
        self._ensure_table()
        now = now or utcnow()
        wanted = sorted(set(streams))
        if not wanted:
            return {}
        query = select(STEP_LEASES.c.stream, STEP_LEASES.c.version, STEP_LEASES.c.expires_at)
        with self.store.engine.connect() as conn:
            rows = conn.execute(query.where(STEP_LEASES.c.stream.in_(wanted))).all()
        return {stream: version for stream, version, until in rows if as_utc(until) > now}

    def _take(self, stream: str, version: int) -> bool:
        """Take the lease unless a take of this step or a later one holds it live."""
        self._ensure_table()
        now = utcnow()
        row = {
            "stream": stream,
            "version": version,
            "expires_at": now + timedelta(seconds=self.ttl),
        }
        writer = self.store.engine.connect().execution_options(**WRITER_OPTIONS)
        with writer as conn, conn.begin():
            insert = pg_insert if conn.dialect.name == "postgresql" else sqlite_insert
            statement = insert(STEP_LEASES).values(row)
            held = STEP_LEASES.c
            taken = conn.execute(
                statement.on_conflict_do_update(
                    index_elements=[held.stream],
                    set_={"version": version, "expires_at": row["expires_at"]},
                    where=(held.version < version) | (held.expires_at <= now),
                ).returning(held.stream)
            ).first()
        return taken is not None

    def give_back(self, stream: str, version: int) -> None:
        """Let the lease go now, if it is still this step's: a take that raised, or one
        that had nothing to write (a run waiting for its reviews, woken by the decision
        with the same step sent again)."""
        writer = self.store.engine.connect().execution_options(**WRITER_OPTIONS)
        with writer as conn, conn.begin():
            conn.execute(
                delete(STEP_LEASES).where(
                    STEP_LEASES.c.stream == stream, STEP_LEASES.c.version == version
                )
            )

    def _renew(self, stream: str, version: int) -> None:
        self._ensure_table()
        row = {
            "stream": stream,
            "version": version,
            "expires_at": utcnow() + timedelta(seconds=self.ttl),
        }
        # BEGIN IMMEDIATE on SQLite: the upsert reads before it writes, and a deferred
        # transaction failed at once with "database is locked" when the recorder
        # committed in between (tests/llm/test_llm_lab.py caught it).
        writer = self.store.engine.connect().execution_options(**WRITER_OPTIONS)
        with writer as conn, conn.begin():
            insert = pg_insert if conn.dialect.name == "postgresql" else sqlite_insert
            statement = insert(STEP_LEASES).values(row)
            conn.execute(
                statement.on_conflict_do_update(
                    index_elements=[STEP_LEASES.c.stream],
                    set_={"version": version, "expires_at": row["expires_at"]},
                )
            )

    def _ensure_table(self) -> None:
        if self._ready:
            return
        self._ready = create_table(self.store, STEP_LEASES)
