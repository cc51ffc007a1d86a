"""A rebuild on several cores: the read models split into groups, each group replaying
the log in a process of its own.

Read models are independent (each writes only its own tables, `projections.projector`)
and each has its own checkpoint, so a group replays the log exactly as the one-process
rebuild would: same pages, same transactions for its read models, same rows. What a
group costs is one more read of the log (~5–6 µs of client CPU an event and ~3 of the
database's), so groups are made only where a core is free to take them, and balanced by
each read model's measured CPU an event (`Projector.cost`) so that they end together:
the findings read model alone costs nearly as much as the six others together
(docs/benchmarks.md, "Rebuild").

PostgreSQL only: SQLite has one writer at a time, so a second process would wait for the
first's transactions (and an in-memory database cannot be shared at all).
"""

import multiprocessing
import os
import pickle
import signal
import threading
import traceback
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from multiprocessing.connection import Connection

from events import EventStore
from projections.projector import Projector

PARALLEL_FROM = 50_000
"""Log positions from which a rebuild is shared out by default: a spawned process takes
~1 s to start (it imports labrxiv), what the one-process rebuild of ~30,000 events takes."""


def default_jobs(store: EventStore) -> int:
    """Processes a rebuild uses when not told: on PostgreSQL, one a core this process may
    run on, at most two (the read models' costs make two groups worth a read of the log
    each), once the log's head is at position `PARALLEL_FROM`; one on SQLite."""
    if not parallel_capable(store) or store.max_position() < PARALLEL_FROM:
        return 1
    return max(1, min(len(os.sched_getaffinity(0)), 2))


def parallel_capable(store: EventStore) -> bool:
    """Whether the store's database takes writers in parallel (PostgreSQL)."""
    return store.engine.dialect.name == "postgresql"


class OneWriter(ValueError):
    """A rebuild in several processes asked of a database that takes one writer at a time."""


SPAWN_SECONDS = 0.75
"""How long a spawned process takes to apply its first page after the rebuild's own
process began with its own (importing labrxiv, connecting, reading): the head start a
split gives the first group (bench/rebuild.py prints it; docs/benchmarks.md)."""


def plan(store: EventStore, projectors: Sequence[Projector], jobs: int) -> list[list[Projector]]:
    """The groups a rebuild in `jobs` processes runs (`split`, with the spawned processes'
    late start spread over the log's events), or `OneWriter` where `store` cannot take
    them: checked before anything is dropped."""
    if jobs > 1 and not parallel_capable(store):
        raise OneWriter(
            f"a rebuild in {jobs} processes needs PostgreSQL: "
            f"{store.engine.dialect.name} takes one writer at a time"
        )
    if jobs == 1:
        return split(projectors, jobs)
    return split(projectors, jobs, lead=SPAWN_SECONDS * 1e6 / max(1, store.max_position()))


def split(projectors: Sequence[Projector], jobs: int, lead: float = 0.0) -> list[list[Projector]]:
    """`projectors` in at most `jobs` groups that end together, the first for this process
    (longest processing time first, each group put where it would end soonest); each
    group keeps the catalogue's order.

    Costs are µs of CPU an event (`Projector.cost`); `lead` is the time, in the same µs an
    event, that the groups after the first start late (they are spawned): a balance of
    costs alone left the spawned process ~2 s of a 500,000-event rebuild to finish alone,
    the machine half idle (bench/rebuild.py)."""
    if jobs < 1:
        raise ValueError(f"jobs must be at least 1, not {jobs}")
    if not projectors:
        return []
    order = {id(p): i for i, p in enumerate(projectors)}
    count = min(jobs, len(projectors))
    groups: list[list[Projector]] = [[] for _ in range(count)]
    ends = [0.0] + [lead] * (count - 1)
    for projector in sorted(projectors, key=lambda p: -p.cost):
        soonest = ends.index(min(ends))
        groups[soonest].append(projector)
        ends[soonest] += projector.cost
    if lead > 0 and not all(groups):  # a start so late that one process would do it all:
        return split(projectors, jobs)  # `jobs` asked for, each gets its share as if at once
    groups = [g for g in groups if g]  # read models of no cost: fewer groups than jobs
    here, *spawned = [sorted(g, key=lambda p: order[id(p)]) for g in groups]
    return [here, *sorted(spawned, key=lambda g: -sum(p.cost for p in g))]


class Elsewhere:
    """A spawned process catching up one group of read models; `result()` waits for it.

    Spawned, not forked: the parent may hold threads and pooled connections a fork would
    copy mid-use. The child ignores Ctrl-C from its start (a terminal sends it to the
    whole process group; one pressed while the child still imported labrxiv printed its
    traceback): the parent, which gets it too, stops every child (`stop`); a child
    stopped mid-page leaves neither that page's rows nor its checkpoint (one
    transaction), like any projector killed mid-page."""

    def __init__(
        self, store: EventStore, projectors: list[Projector], page: int, batch_pages: int
    ) -> None:
        self.names = ", ".join(p.name for p in projectors)
        context = multiprocessing.get_context("spawn")
        self._receive, send = context.Pipe(duplex=False)
        url = store.engine.url.render_as_string(hide_password=False)
        self._process = context.Process(
            target=_catch_up,
            args=(url, projectors, page, batch_pages, send),
            name=f"labrxiv-rebuild ({self.names})",
            daemon=True,
        )
        with _ctrl_c_ignored():  # inherited: the child ignores it from its first import on
            self._process.start()
        send.close()  # the child's end: EOF here once the child is gone
        self._outcome: tuple[str, object, str] | None = None

    @property
    def pid(self) -> int | None:
        """The child's process id (None before it started)."""
        return self._process.pid

    def check(self) -> None:
        """Raise the child's failure if it has failed (or died) by now; else return at
        once. The parent checks between its own pages, so a child that fails at its first
        page stops the rebuild then, not once the parent's own group is done."""
        if self._outcome is None and not self._receive.poll():
            return
        if self._outcome is None or self._outcome[0] == "error":
            self.result()

    def result(self) -> int:
        """The events × read models the child applied; its error, raised here (with the
        child's traceback as a note), if it failed; a `RuntimeError` naming its read
        models if it died without a word."""
        if self._outcome is None:
            try:
                self._outcome = self._receive.recv()
            except EOFError:
                self._process.join()
                raise RuntimeError(
                    f"the rebuild process for {self.names} died "
                    f"(exit code {self._process.exitcode})"
                ) from None
            self._process.join()
        outcome, value, trace = self._outcome
        if isinstance(value, BaseException):
            if trace and trace not in getattr(value, "__notes__", ()):
                value.add_note(trace)
            raise value
        assert outcome == "done" and isinstance(value, int)
        return value

    def stop(self) -> None:
        """End the child if it still runs (Ctrl-C, or the parent's own group failed)."""
        if self._process.is_alive():
            self._process.terminate()
        self._process.join()
        self._receive.close()


@contextmanager
def _ctrl_c_ignored() -> Iterator[None]:
    """SIGINT ignored while a child is started (main thread only, where handlers are
    set): a process begun with it ignored keeps it so."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _catch_up(
    url: str, projectors: list[Projector], page: int, batch_pages: int, send: Connection
) -> None:
    """In a child: replay the log to `projectors` from their checkpoints; send back
    `("done", applied, "")` or `("error", exception, the child's traceback)`."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # if started from another thread
    from projections.runner import ProjectionRunner

    try:
        store = EventStore.from_url(url, create=False)
        try:
            runner = ProjectionRunner(store, projectors, page=page, batch_pages=batch_pages)
            applied = runner.catch_up()
        finally:
            store.engine.dispose()
    except BaseException as error:  # noqa: BLE001 - every failure goes back to the parent
        try:  # as it is if it survives the trip (the parent unpickles it), else its text
            sent: BaseException = pickle.loads(pickle.dumps(error))
        except Exception:  # noqa: BLE001
            sent = RuntimeError(f"{type(error).__name__}: {error}")
        trace = f"in the rebuild process for {', '.join(p.name for p in projectors)}:\n"
        send.send(("error", sent, trace + traceback.format_exc()))
        return
    send.send(("done", applied, ""))
