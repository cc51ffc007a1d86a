"""Runs projectors over the log: catch up, rebuild (`labrxiv.projecting` follows it)."""

import logging
from collections.abc import Callable, Collection, Sequence
from contextlib import closing
from dataclasses import dataclass
from typing import NamedTuple

from sqlalchemy import Connection, delete, func, inspect, select

from events import EventStore
from events.engines import WRITER_OPTIONS, writing
from events.gc_pause import gc_paused
from events.recorded import Recorded
from events.schema import create_tables, schema_transaction
from events.store import EVENTS
from projections.checkpoints import (
    CHECKPOINTS,
    advance_checkpoints,
    claim_checkpoints,
    ensure_checkpoints,
    read_checkpoint,
    read_checkpoints,
)
from projections.pages import PAGES_AHEAD, batches, prefetched_pages
from projections.parallel_rebuild import Elsewhere, default_jobs, plan
from projections.projector import Projector
from projections.rebuilding import REBUILDS, clear_rebuilt, mark_rebuilding, rebuilding
from projections.versions import UNRECORDED, VERSIONS, read_versions, record_versions

log = logging.getLogger(__name__)

BOOKKEEPING = (CHECKPOINTS, VERSIONS, REBUILDS)
"""The tables that say how far and how each read model was built."""

BATCH_PAGES = PAGES_AHEAD
"""Pages of the log applied in one transaction. A transaction is ~15 round trips to the
database whatever its size (claim, each projector's stored rows and writes, checkpoint,
commit), and on a busy 2-core machine each waits for a core: in A/B runs of the
every-projector rebuild, one page a transaction made 0.36-0.48 of the raw read and
four made 0.50-0.72, with ~5% less CPU per event (docs/benchmarks.md)."""


@dataclass(frozen=True)
class Lag:
    """How far a projector is behind the log."""

    name: str
    checkpoint: int
    head: int
    rebuilding_to: int | None = None
    """Being rebuilt from position 0, and whole again only at this position (None: not
    being rebuilt; `projections.rebuilding`)."""

    @property
    def behind(self) -> int:
        """Positions not yet applied (an upper bound on events: positions may have gaps)."""
        return max(0, self.head - self.checkpoint)


class Rebuilt(NamedTuple):
    """What a rebuild did."""

    applied: int
    """Events applied, summed over the read models (each replays the whole log)."""
    processes: int
    """Processes it ran in: no more than the read models."""


class ProjectionRunner:
    """Applies the log to a set of projectors, each at its own checkpoint."""

    def __init__(
        self,
        store: EventStore,
        projectors: Sequence[Projector],
        page: int = 5000,
        batch_pages: int = BATCH_PAGES,
    ):
        self.store = store
        self.projectors = list(projectors)
        self.page = page
        """Events read from the log at a time."""
        self.batch_pages = batch_pages
        """Pages applied in one transaction (fewer when fewer are left to apply)."""
        self._schema_checked = False
        self.between_batches: Callable[[], object] | None = None
        """Called after each transaction of a catch-up (a parallel rebuild checks its
        other processes there); what it raises stops the catch-up."""

    def create_schema(self) -> list[str]:
        """Create the checkpoint table and every projector's tables (idempotent); returns
        the names of the read models it found stale and dropped (on its first call).

        A read model stored by an older labrxiv (tables with other columns than today's,
        or built by another version of its fold: `projections.versions`) is dropped with
        its checkpoint, to be replayed from the log: read models are derived data."""
        reset: list[str] = []
        unrecorded: dict[str, int] = {}
        if not self._schema_checked:
            with self.store.engine.connect() as conn:
                versions = read_versions(conn)
                stale = [(p, _stale(conn, p, versions)) for p in self.projectors]
                fresh = {p.name for p, why in stale if why is None and _new_to_log(conn, p)}
            for projector, why in stale:
                if why is not None and self._reset(projector, recheck=True):
                    log.warning(
                        "read model %s: %s; rebuilding it from the log", projector.name, why
                    )
                    reset.append(projector.name)
                elif projector.name in fresh and self._reset(projector, new=True):
                    log.debug("read model %s: new to this log; building it", projector.name)
                    reset.append(projector.name)
            unrecorded = {
                p.name: p.version
                for p in self.projectors
                if p.name not in versions and p.name not in reset
            }
            self._schema_checked = True
        tables = [*BOOKKEEPING, *(t for p in self.projectors for t in p.tables)]
        # One process at a time (`events.schema`): two projectors started together on a
        # fresh PostgreSQL database race on CREATE TABLE and one dies. The
        # versions go in the same transaction as the tables: committed apart, another
        # process could see the tables with no version and reset them needlessly.
        record = None
        if unrecorded:

            def record(conn: Connection) -> None:
                record_versions(conn, unrecorded, replace=False)

        create_tables(self.store.engine, tables, then=record)
        return reset

    def _reset(self, projector: Projector, recheck: bool = False, new: bool = False) -> bool:
        """Drop a projector's tables and checkpoint and record its version: it starts
        again from position 0. `recheck`: only if it is still stale once the transaction
        holds the database (another process may have reset it meanwhile); with `new`,
        only if it is a read model new to a log that holds events (`_new_to_log`): built
        as a rebuild is, so read commands finish it before they read. Returns whether it
        was reset.

        One writer transaction (SQLite: begun IMMEDIATE; PostgreSQL: the schema lock), so
        a crash never leaves the tables dropped and the checkpoint where it was. The read
        model is marked as rebuilding until it reaches today's head of the log
        (`projections.rebuilding`): a read command finishes a rebuild cut short."""
        with schema_transaction(self.store.engine) as conn:
            if new:
                if not _new_to_log(conn, projector):
                    return False
            elif recheck and _stale(conn, projector, read_versions(conn)) is None:
                return False
            # The checkpoint first: a projector applying a page holds its row (`claim_`
            # `checkpoints`) and then writes the tables; dropping them first would wait for
            # it while holding what it waits for (PostgreSQL: a deadlock, one side killed).
            CHECKPOINTS.metadata.create_all(conn, tables=BOOKKEEPING)
            conn.execute(delete(CHECKPOINTS).where(CHECKPOINTS.c.name == projector.name))
            for table in projector.tables:
                table.drop(conn, checkfirst=True)
            record_versions(conn, {projector.name: projector.version}, replace=True)
            head = conn.execute(select(func.max(EVENTS.c.position))).scalar()
            mark_rebuilding(conn, projector.name, int(head or 0))
        return True

    def finish_rebuilds(self, announced: Collection[str] = ()) -> list[str]:
        """Finish the rebuilds of this runner's read models that were dropped and not yet
        replayed to the head they were dropped at (said in a warning unless named in
        `announced`), and clear the marks of those that got there; returns the names it
        caught up. What read commands run before they read.

        Another process may be replaying the same read model (the projector service after
        an upgrade, a `labrxiv rebuild`): a catch-up stops when that process moves the
        checkpoint first, so this catches up again until the mark is reached, each round
        applying pages or waiting for the other's. A round in which neither moved it ends
        the wait (with a warning: the read model is shown as far as it got)."""
        names = [p.name for p in self.projectors]
        marks, checkpoints = self._marks(names)
        if not marks:  # the usual case: nothing being rebuilt
            return []
        unfinished = sorted(n for n, until in marks.items() if checkpoints.get(n, 0) < until)
        for name in sorted(set(unfinished) - set(announced)):
            log.warning(
                "read model %s: its rebuild is at position %d of %d (cut short, or going on "
                "in another process); finishing it",
                name,
                checkpoints.get(name, 0),
                marks[name],
            )
        left = unfinished
        while left:
            projectors = [p for p in self.projectors if p.name in left]
            ProjectionRunner(self.store, projectors, self.page, self.batch_pages).catch_up()
            before = checkpoints
            marks, checkpoints = self._marks(left)
            left = sorted(n for n, until in marks.items() if checkpoints.get(n, 0) < until)
            if left and all(checkpoints.get(n, 0) == before.get(n, 0) for n in left):
                log.warning("read model(s) %s: no further; shown as far as rebuilt", left)
                break
        marks, checkpoints = self._marks(names)
        if any(checkpoints.get(n, 0) >= until for n, until in marks.items()):
            self._clear_rebuilt(marks)
        return unfinished

    def _marks(self, names: Collection[str]) -> tuple[dict[str, int], dict[str, int]]:
        """The rebuild marks of those of `names` that have one, and their checkpoints."""
        with self.store.engine.connect() as conn:
            marks = rebuilding(conn, names)
            return marks, read_checkpoints(conn, list(marks)) if marks else {}

    def _clear_rebuilt(self, marks: dict[str, int]) -> None:
        """Clear the rebuild marks (as read: `marks`) whose read model reached them. Under
        the schema lock on PostgreSQL, as `_reset` marks: a reset committed between this
        reading the checkpoints and deleting would lose its mark to a delete of the same
        head (SQLite's writer transaction already excludes it)."""
        with schema_transaction(self.store.engine) as conn:
            clear_rebuilt(conn, marks, read_checkpoints(conn, list(marks)))

    def catch_up(self, limit: int | None = None) -> int:
        """Apply every event not yet applied (at most `limit` per projector); returns how many
        (summed over projectors)."""
        self.create_schema()
        names = [p.name for p in self.projectors]
        with self.store.engine.connect() as conn:
            stored = read_checkpoints(conn, names)
        if len(stored) < len(set(names)):
            with writing(self.store.engine) as conn:
                ensure_checkpoints(conn, names)
        # Projectors at the same checkpoint (all of them after a rebuild) share one read
        # of the log and apply each page in one transaction that moves all their
        # checkpoints. Reading the log once per projector made `labrxiv rebuild` read it
        # four times; a transaction per projector and page cost four connection
        # check-outs, commits and checkpoint round trips a page (bench/rebuild.py).
        groups: dict[int, list[Projector]] = {}
        for projector in self.projectors:
            groups.setdefault(stored.get(projector.name, 0), []).append(projector)
        return sum(self._catch_up_from(start, group, limit) for start, group in groups.items())

    def _catch_up_from(self, seen: int, projectors: list[Projector], limit: int | None) -> int:
        """Apply the log after `seen` to `projectors`, each at checkpoint `seen`."""
        active = list(projectors)
        applied = total = 0
        writer = self.store.engine.connect().execution_options(**WRITER_OPTIONS)
        # One connection for every page: a check-out cost a ping a page. The collector is
        # paused from the first page to the last, not page by page: between pages it
        # walked the pages the reader had read ahead (~10% of a rebuild's CPU), and the
        # fold makes no cyclic garbage (a rebuild's collections found none).
        pages = prefetched_pages(self.store, seen, self.page, limit)
        with gc_paused(), writer as conn, closing(pages):
            for page in batches(pages, self.page * self.batch_pages):
                if limit is not None and applied >= limit:
                    break
                page = page if limit is None else page[: limit - applied]
                to = page[-1].position
                active = self._apply_page(conn, active, page, seen, to)
                if not active:
                    break
                total += len(page) * len(active)
                seen = to
                applied += len(page)
                if self.between_batches is not None:
                    self.between_batches()
        return total

    def _apply_page(
        self,
        conn: Connection,
        projectors: list[Projector],
        page: list[Recorded],
        seen: int,
        to: int,
    ) -> list[Projector]:
        """Apply `page` (after `seen`, up to `to`) to `projectors` and move their checkpoints,
        in one transaction on `conn`; returns those that applied it (a projector whose
        checkpoint another process moved first stops)."""
        with conn.begin():
            claimed = claim_checkpoints(conn, [p.name for p in projectors])
            applying = [p for p in projectors if claimed.get(p.name) == seen]
            if len(applying) < len(projectors):
                # Debug, not info: processes taking turns is the normal case (several
                # `labrxiv projector`s, or the campaign watcher catching up `runs` four
                # times a second beside them); at info each lost turn printed a line.
                stopped = [p.name for p in projectors if p not in applying]
                log.debug("%s: another projector moved on; stopping", ", ".join(stopped))
            for projector in applying:
                projector.apply(conn, page)
            if not applying or advance_checkpoints(conn, [p.name for p in applying], seen, to):
                return applying
            conn.rollback()
        # Not expected (a claimed checkpoint stays locked until the commit), but should a
        # checkpoint have moved anyway, none of the page is kept: alone, a projector stops;
        # in a group, each tries the page on its own.
        log.debug("%s: a checkpoint moved during the page", ", ".join(p.name for p in applying))
        if len(applying) == 1:
            return []
        return [p for p in applying if self._apply_page(conn, [p], page, seen, to)]

    def rebuild(self, jobs: int | None = None) -> Rebuilt:
        """Drop every read model and its checkpoint, then replay the log from position 0,
        in `jobs` processes (`projections.parallel_rebuild`; default: `default_jobs`); raises
        `projections.parallel_rebuild.OneWriter`, before dropping anything, where the database
        cannot take them."""
        jobs = default_jobs(self.store) if jobs is None else jobs
        groups = plan(self.store, self.projectors, jobs)
        self.create_schema()
        for projector in self.projectors:
            self._reset(projector)
        rebuilt = self._replay(groups)
        self.finish_rebuilds()  # each reached its mark: only the marks are cleared
        return rebuilt

    def _replay(self, groups: list[list[Projector]]) -> Rebuilt:
        """Catch up each group of read models in a process of its own: the first here,
        where imports are warm (`split` gives it the others' late start), the others
        spawned beside it."""
        if len(groups) == 1:
            return Rebuilt(self.catch_up(), 1)
        elsewhere: list[Elsewhere] = []
        try:
            for group in groups[1:]:
                elsewhere.append(Elsewhere(self.store, group, self.page, self.batch_pages))
            here = ProjectionRunner(self.store, groups[0], self.page, self.batch_pages)

            def check_elsewhere() -> None:
                for child in elsewhere:
                    child.check()

            here.between_batches = check_elsewhere
            applied = here.catch_up() + sum(child.result() for child in elsewhere)
            return Rebuilt(applied, len(groups))
        finally:
            for child in elsewhere:
                child.stop()

    def lag(self) -> list[Lag]:
        """Each projector's checkpoint against the head of the log."""
        self.create_schema()
        head = self.store.max_position()
        with self.store.engine.connect() as conn:
            marks = rebuilding(conn, [p.name for p in self.projectors])
            lags = []
            for projector in self.projectors:
                checkpoint = read_checkpoint(conn, projector.name)
                mark = marks.get(projector.name)
                whole = mark is None or checkpoint >= mark  # reached: a mark not yet cleared
                lags.append(Lag(projector.name, checkpoint, head, None if whole else mark))
            return lags


def _new_to_log(conn: Connection, projector: Projector) -> bool:
    """Whether the projector's read model is new to a log that already holds events: none
    of its tables stored and no checkpoint of it (a read model added since the database
    was built, or one only other runners built so far)."""
    inspector = inspect(conn)
    if any(inspector.has_table(t.name) for t in projector.tables):
        return False
    if inspector.has_table(CHECKPOINTS.name):
        held = select(CHECKPOINTS.c.name).where(CHECKPOINTS.c.name == projector.name)
        if conn.execute(held).first() is not None:
            return False
    return conn.execute(select(EVENTS.c.position).limit(1)).first() is not None


def _stale(conn: Connection, projector: Projector, versions: dict[str, int]) -> str | None:
    """Why the projector's stored read model cannot be kept (None: it can, or none is
    stored): tables with other columns than today's, or another version of its fold."""
    inspector = inspect(conn)
    stored = [t for t in projector.tables if inspector.has_table(t.name)]
    if stored and len(stored) < len(projector.tables):
        missing = [t.name for t in projector.tables if t not in stored]
        return f"table(s) {', '.join(missing)} missing (added since it was built)"
    changed = [
        t.name
        for t in stored
        if {c["name"] for c in inspector.get_columns(t.name)} != set(t.c.keys())
    ]
    if changed:
        return f"table(s) {', '.join(changed)} changed since it was built"
    version = versions.get(projector.name, UNRECORDED)
    if stored and version != projector.version:
        return f"built by an older labrxiv (version {version} of its fold, now {projector.version})"
    return None
