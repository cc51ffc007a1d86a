"""Runs projectors over the log: catch up, follow, rebuild from position 0."""

import logging
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from sqlalchemy import Table, delete, inspect
from sqlalchemy.exc import DBAPIError

from events import EventStore
from events.engines import WRITER_OPTIONS
from events.gc_pause import gc_paused
from events.recorded import Recorded
from projections.checkpoints import (
    CHECKPOINTS,
    advance_checkpoint,
    claim_checkpoint,
    ensure_checkpoint,
    read_checkpoint,
)
from projections.projector import Projector

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Lag:
    """How far a projector is behind the log."""

    name: str
    checkpoint: int
    head: int

    @property
    def behind(self) -> int:
        """Positions not yet applied (an upper bound on events: positions may have gaps)."""
        return max(0, self.head - self.checkpoint)


class ProjectionRunner:
    """Applies the log to a set of projectors, each at its own checkpoint."""

    def __init__(self, store: EventStore, projectors: Sequence[Projector], page: int = 5000):
        self.store = store
        self.projectors = list(projectors)
        self.page = page
        self._schema_checked = False

    def create_schema(self) -> None:
        """Create the checkpoint table and every projector's tables (idempotent).

        A read model whose stored tables do not have today's columns (written by an older
        labrxiv) is dropped and rebuilt from the log: read models are derived data."""
        if not self._schema_checked:
            for projector in self.projectors:
                changed = _changed_tables(self.store, projector)
                if changed:
                    log.warning(
                        "read model %s: table(s) %s changed since they were built; "
                        "rebuilding them from the log",
                        projector.name,
                        ", ".join(changed),
                    )
                    self._reset(projector)
            self._schema_checked = True
        tables = [CHECKPOINTS, *(t for p in self.projectors for t in p.tables)]
        try:
            self._create_missing(tables)
        except DBAPIError:
            # Another process created them at the same time (PostgreSQL: duplicate key on
            # pg_type, seen when a projector and the campaign watcher started at once on a
            # fresh database): they exist now, and a second pass skips them. A fault of
            # another kind fails again here and is raised.
            self._create_missing(tables)

    def _create_missing(self, tables: list[Table]) -> None:
        """Create whichever of `tables` do not exist yet.

        Looked at first without a lock: this runs at every catch-up, and the tables are
        almost always there. Created in one writer transaction: SQLite begins it
        IMMEDIATE, so the existence checks and the CREATEs see the same database. In a
        deferred one, a commit by the recorder in between failed the CREATE at once with
        "database is locked" (the campaign watcher creates `runs` while labs record)."""
        inspector = inspect(self.store.engine)
        if all(inspector.has_table(table.name) for table in tables):
            return
        writer = self.store.engine.connect().execution_options(**WRITER_OPTIONS)
        with writer as conn, conn.begin():
            CHECKPOINTS.metadata.create_all(conn, tables=tables)

    def _reset(self, projector: Projector) -> None:
        """Drop a projector's tables and checkpoint: it starts again from position 0.

        One writer transaction (see `_create_missing`), so a crash never leaves the
        tables dropped and the checkpoint where it was."""
        writer = self.store.engine.connect().execution_options(**WRITER_OPTIONS)
        with writer as conn, conn.begin():
            for table in projector.tables:
                table.drop(conn, checkfirst=True)
            CHECKPOINTS.metadata.create_all(conn, tables=[CHECKPOINTS])
            conn.execute(delete(CHECKPOINTS).where(CHECKPOINTS.c.name == projector.name))

    def catch_up(self, limit: int | None = None) -> int:
        """Apply every event not yet applied (at most `limit` per projector); returns how many
        (summed over projectors)."""
        self.create_schema()
        with self.store.engine.connect() as conn:
            seen = {p.name: read_checkpoint(conn, p.name) for p in self.projectors}
        # Projectors at the same checkpoint (all of them after a rebuild) share one read
        # of the log; each still applies a page in its own transaction. Reading the log
        # once per projector made `labrxiv rebuild` read it four times.
        groups: dict[int, list[Projector]] = {}
        for projector in self.projectors:
            groups.setdefault(seen[projector.name], []).append(projector)
        return sum(self._catch_up_from(start, group, limit) for start, group in groups.items())

    def _catch_up_from(self, seen: int, projectors: list[Projector], limit: int | None) -> int:
        """Apply the log after `seen` to `projectors`, each at checkpoint `seen`."""
        active = list(projectors)
        applied = total = 0
        for page in _prefetched_pages(self.store, seen, self.page):
            if limit is not None and applied >= limit:
                break
            page = page if limit is None else page[: limit - applied]
            to = page[-1].position
            active = [p for p in active if self._apply_page(p, page, seen, to)]
            if not active:
                break
            total += len(page) * len(active)
            seen = to
            applied += len(page)
        return total

    def _apply_page(self, projector: Projector, page: list[Recorded], seen: int, to: int) -> bool:
        """Apply `page` (after `seen`, up to `to`) and move the checkpoint, in one transaction;
        False when another process moved the checkpoint first (this one stops)."""
        writer = self.store.engine.connect().execution_options(**WRITER_OPTIONS)
        with gc_paused(), writer as conn:  # a page's objects live until it is applied
            with conn.begin():
                ensure_checkpoint(conn, projector.name)
                # Debug, not info: processes taking turns is the normal case (several
                # `labrxiv projector`s, or the campaign watcher catching up `runs` four
                # times a second beside them); at info each lost turn printed a line.
                if claim_checkpoint(conn, projector.name) != seen:
                    log.debug("%s: another projector moved on; stopping", projector.name)
                    return False
                projector.apply(conn, page)
                if not advance_checkpoint(conn, projector.name, seen, to):
                    conn.rollback()
                    log.debug("%s: checkpoint moved by another projector", projector.name)
                    return False
        return True

    def follow(self, poll_seconds: float = 0.5, stop_after: float | None = None) -> None:
        """Keep applying new events as they are recorded (Ctrl-C to stop)."""
        started = time.monotonic()
        while stop_after is None or time.monotonic() - started < stop_after:
            if self.catch_up() == 0:
                time.sleep(poll_seconds)

    def rebuild(self) -> int:
        """Drop every read model and its checkpoint, then replay the log from position 0."""
        self.create_schema()
        for projector in self.projectors:
            self._reset(projector)
        return self.catch_up()

    def lag(self) -> list[Lag]:
        """Each projector's checkpoint against the head of the log."""
        self.create_schema()
        head = self.store.max_position()
        with self.store.engine.connect() as conn:
            return [Lag(p.name, read_checkpoint(conn, p.name), head) for p in self.projectors]


def _changed_tables(store: EventStore, projector: Projector) -> list[str]:
    """The projector's tables that exist with other columns than today's."""
    inspector = inspect(store.engine)
    changed = []
    for table in projector.tables:
        if inspector.has_table(table.name):
            stored = {c["name"] for c in inspector.get_columns(table.name)}
            if stored != set(table.c.keys()):
                changed.append(table.name)
    return changed


def _prefetched_pages(store: EventStore, after: int, page: int) -> Iterator[list[Recorded]]:
    """Pages of the log after `after`; the next page is read while this one is applied."""
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="labrxiv-prefetch") as pool:
        pending = pool.submit(store.read_records, after, page)
        while True:
            batch = pending.result()
            if not batch:
                return
            pending = pool.submit(store.read_records, batch[-1].position, page)
            yield batch
