"""A rebuild on several cores: the read models split into groups, each group replaying
the log in a process of its own.

Read models are independent (each writes only its own tables, `projections.projector`)
and each has its own checkpoint, so a group replays the log exactly as the one-process
rebuild would: same pages, same transactions for its read models, same rows. What a
group costs is one more read of the log (~7 µs of client CPU an event and ~3 of the
database's), so groups are made only where a core is free to take them, and balanced by
each read model's measured CPU an event (`Projector.cost`): the findings read model
alone costs more than the six others together (docs/benchmarks.md, "Rebuild").

PostgreSQL only: SQLite has one writer at a time, so a second process would wait for the
first's transactions (and an in-memory database cannot be shared at all).
"""

import logging
import multiprocessing
import os
from collections.abc import Sequence
from concurrent.futures import Future, ProcessPoolExecutor

from events import EventStore
from projections.projector import Projector

log = logging.getLogger(__name__)


PARALLEL_FROM = 50_000
"""Log positions from which a rebuild is shared out by default: a spawned process takes
~1 s to start (it imports labrxiv), what the one-process rebuild of ~30,000 events takes."""


def default_jobs(store: EventStore) -> int:
    """Processes a rebuild uses when not told: on PostgreSQL, one a core, at most two (the
    read models' costs make two groups worth a read of the log each), once the log holds
    `PARALLEL_FROM` positions; one on SQLite."""
    if not parallel_capable(store) or store.max_position() < PARALLEL_FROM:
        return 1
    return max(1, min(os.cpu_count() or 1, 2))


def parallel_capable(store: EventStore) -> bool:
    """Whether the store's database takes writers in parallel (PostgreSQL)."""
    return store.engine.dialect.name == "postgresql"


def split(projectors: Sequence[Projector], jobs: int) -> list[list[Projector]]:
    """`projectors` in at most `jobs` groups of near-equal cost, the costliest first
    (longest processing time first); each group keeps the catalogue's order."""
    if jobs < 1:
        raise ValueError(f"jobs must be at least 1, not {jobs}")
    order = {id(p): i for i, p in enumerate(projectors)}
    groups: list[list[Projector]] = [[] for _ in range(min(jobs, len(projectors)))]
    loads = [0.0] * len(groups)
    for projector in sorted(projectors, key=lambda p: -p.cost):
        lightest = loads.index(min(loads))
        groups[lightest].append(projector)
        loads[lightest] += projector.cost
    kept = [sorted(g, key=lambda p: order[id(p)]) for g in groups if g]
    return sorted(kept, key=lambda g: -sum(p.cost for p in g))


def catch_up_elsewhere(
    store: EventStore,
    groups: list[list[Projector]],
    page: int,
    batch_pages: int,
) -> tuple[ProcessPoolExecutor, list[Future[int]]]:
    """Start each group's catch-up in a process of its own (spawned: the parent may hold
    threads and pooled connections a fork would copy mid-use); the caller waits on the
    futures and shuts the pool down."""
    url = store.engine.url.render_as_string(hide_password=False)
    context = multiprocessing.get_context("spawn")
    pool = ProcessPoolExecutor(max_workers=len(groups), mp_context=context)
    futures = [pool.submit(_catch_up, url, group, page, batch_pages) for group in groups]
    return pool, futures


def _catch_up(url: str, projectors: list[Projector], page: int, batch_pages: int) -> int:
    """In a child: replay the log to `projectors` from their checkpoints."""
    from projections.runner import ProjectionRunner

    store = EventStore.from_url(url, create=False)
    try:
        runner = ProjectionRunner(store, projectors, page=page, batch_pages=batch_pages)
        return runner.catch_up()
    finally:
        store.engine.dispose()
