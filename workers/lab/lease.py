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
"""

import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta

from sqlalchemy import BigInteger, Column, DateTime, MetaData, String, Table, select
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
    def holding(self, stream: str, version: int) -> Iterator[None]:
        """Hold the lease on `stream`'s step after `version` while the block runs."""
        self._renew(stream, version)
        done = threading.Event()

        def renew() -> None:
            while not done.wait(self.ttl / 3):
                self._renew(stream, version)

        renewer = threading.Thread(target=renew, name=f"lease {stream}", daemon=True)
        renewer.start()
        try:
            yield
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
