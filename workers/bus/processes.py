"""The embedded bus across processes: several workers on one machine, no broker.

One process's steps share one interpreter lock: at 100 llm labs an embedded campaign
spent a core on them and answered a quarter to a half of the calls its labs could make
(bench/embedded_scale.py). A `Fleet` runs the steps in child processes instead, each a
whole embedded worker (its own connections to the shared SQLite log, a `LocalBus` of
threads, a reactor), while the command that started them watches, records its own
events and projects. A task goes to the process that owns the stream it names (its first
argument, a run's or a review's, hashed), so that a run's steps run in one process (its
cached state, its model calls written ahead); a record task runs where it was sent.
SQLite's one writer is taken in turn by every process (`events.engines`), and the step
leases are in the log's database, as for distributed workers: two processes never take
one step.

Nothing the processes share has a lock that a process killed mid-use would leave held
(`kill -9`, the OOM killer): each sender has a pipe of its own to each child, guarded by
a lock of its own process; the counts of tasks sent and run are a slot a process, written
by that process alone; the flags are bytes. So a child's death is seen and said
(`watch`), and the others go on to a clean stop. The fleet counts the tasks sent and not
yet run across processes, so `join` waits for all of them and what they sent. Ctrl-C is
the parent's: the children ignore it, and `abandon` has each drop its queued tasks and
let its running ones end, as the one-process bus does. A child whose parent died stops at
once (its runs are stopped runs: `labrxiv resume` goes on with them). The children's log
lines are said by the parent.
"""

import logging
import logging.handlers
import multiprocessing
import os
import signal
import threading
import time
import zlib
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection, wait
from multiprocessing.context import SpawnProcess
from typing import Any

from workers.bus.base import RECORD_TASK, BusStopped
from workers.bus.dead_letters import DEAD_LETTER_TASK
from workers.bus.local import LocalBus, Runner

log = logging.getLogger(__name__)

WHERE_SENT = (RECORD_TASK, DEAD_LETTER_TASK)
"""Tasks run by the process that sent them (they name no stream of their own)."""

LOOK_S = 0.05
"""How often a process looks at a flag it waits for (the stop, a child's readiness)."""
PARENT_CHECK_S = 1.0
"""How often a child looks whether its parent is still there."""
HERE_THREADS = 2
"""Threads of the parent for the tasks it sends to itself (its own events' records)."""


class ChildDied(RuntimeError):
    """A worker process of the fleet ended before it was told to."""


def owner(task: str, args: Sequence[Any], processes: int) -> int | None:
    """The process that runs `task(*args)`, or None where it was sent."""
    if task in WHERE_SENT or not args or not isinstance(args[0], str):
        return None
    return zlib.crc32(args[0].encode()) % processes


class Counts:
    """The counts and flags every process shares: a slot a process (the parent is the
    last) of the tasks it sent and of those it ran, each written by that process alone;
    the stop; each child's readiness and its stop's end."""

    def __init__(self, processes: int) -> None:
        context = multiprocessing.get_context("spawn")
        self.processes = processes
        self.sent = context.Array("q", processes + 1, lock=False)
        self.done = context.Array("q", processes + 1, lock=False)
        self.flags = context.Array("b", 1 + 2 * processes, lock=False)

    @property
    def abandoned(self) -> bool:
        return bool(self.flags[0])

    def ready(self, child: int) -> int:
        """The flag a child sets once it takes tasks."""
        return 1 + child

    def stopped(self, child: int) -> int:
        """The flag a child sets once its tasks are dropped or ended after the stop."""
        return 1 + self.processes + child

    def pending(self) -> int:
        """Tasks sent and not yet run, in all processes. The runs are read before the
        sends: a task's send is counted before it can run, and its own sends before its
        run ends, so 0 means nothing was queued or running at a moment between the two
        reads, and nothing more comes but from the parent."""
        done = sum(self.done[:])
        return sum(self.sent[:]) - done


class Ends:
    """One process's ends of the fleet's pipes: a writing end to each child but itself,
    and (a child's) a reading end from each other process and its log pipe's writing end."""

    def __init__(
        self,
        counts: Counts,
        me: int,
        writers: dict[int, Connection],
        readers: list[Connection],
        log: Connection | None,
    ) -> None:
        self.counts = counts
        self.me = me
        self.writers = writers
        self.readers = readers
        self.log = log


def wire(processes: int) -> tuple[Ends, list[Ends], list[Connection]]:
    """The pipes of a fleet: the parent's ends, each child's, and the parent's reading
    ends of the children's log pipes. A pipe runs from each process to each child (the
    parent is process `processes`); once the children have theirs, the parent closes
    its copies of them (`Fleet`), so a child's death ends its pipes."""
    context = multiprocessing.get_context("spawn")
    counts = Counts(processes)
    pipes = {
        (sender, child): context.Pipe(duplex=False)
        for sender in range(processes + 1)
        for child in range(processes)
        if sender != child
    }
    logs = [context.Pipe(duplex=False) for _ in range(processes)]

    def ends(me: int) -> Ends:
        writers = {child: pipe[1] for (sender, child), pipe in pipes.items() if sender == me}
        readers = [pipe[0] for (_, child), pipe in pipes.items() if child == me]
        return Ends(counts, me, writers, readers, logs[me][1] if me < processes else None)

    return ends(processes), [ends(i) for i in range(processes)], [r for r, _ in logs]


class Post:
    """One process's sending ends, and its slot of the counts."""

    def __init__(self, ends: Ends) -> None:
        self.counts = ends.counts
        self.me = ends.me
        self._ends = ends.writers
        self._locks = {child: threading.Lock() for child in self._ends}
        self._counting = threading.Lock()

    def count_sent(self) -> None:
        with self._counting:
            self.counts.sent[self.me] += 1

    def count_done(self) -> None:
        with self._counting:
            self.counts.done[self.me] += 1

    def to(self, child: int, task: str, args: tuple[Any, ...]) -> None:
        """Send `task(*args)` to `child`, counted; `BusStopped` if it is gone."""
        self.count_sent()
        try:
            with self._locks[child]:
                self._ends[child].send((task, args))
        except OSError:
            self.count_done()  # never to run
            raise BusStopped(f"{task} was not sent: worker process {child} is gone") from None

    def end(self, child: int) -> None:
        """Tell `child` to finish its queue and end (the parent's, at close)."""
        try:
            with self._locks[child]:
                self._ends[child].send(None)
        except OSError:
            pass  # gone already


def _route(post: Post, local: LocalBus, task: str, args: tuple[Any, ...]) -> None:
    """Send `task(*args)` to the process that owns it, counted: on `local`'s threads when
    that is this one (or it runs where sent), else down the pipe (the parent, process
    `processes`, owns no task)."""
    index = owner(task, args, post.counts.processes)
    if index is not None and index != post.me:
        post.to(index, task, args)
        return
    post.count_sent()
    try:
        local.send(task, *args)
    except BusStopped:
        post.count_done()
        raise


class RoutedBus:
    """A child's bus: its own tasks on its threads, the others' to their processes."""

    def __init__(self, local: LocalBus, post: Post) -> None:
        self._local = local
        self._post = post

    def send(self, task: str, *args: Any) -> None:
        if self.stopped:
            raise BusStopped(f"{task} was not sent: the bus was stopped")
        _route(self._post, self._local, task, args)

    @property
    def stopped(self) -> bool:
        return self._local.stopped or self._post.counts.abandoned

    def close(self) -> None:
        """The child's end closes its local bus (`Child.serve`)."""


class Fleet:
    """The parent's bus: `processes` children take the steps; it runs the tasks that
    run where sent (its own events' records) on threads of its own."""

    def __init__(
        self, serve: Callable[..., None], serve_args: tuple[Any, ...], processes: int, threads: int
    ) -> None:
        """Start `processes` children, each running `serve(*serve_args, child)` with a
        `Child` of `threads` bus threads; returns once every child takes tasks
        (`ChildDied` if one ended first: a child imports labrxiv anew, a second or more).
        `run_here` must be called before the first task that runs where sent."""
        mine, theirs, logs = wire(processes)
        self._counts = mine.counts
        self._post = Post(mine)
        self._here = LocalBus(threads=HERE_THREADS, on_done=self._post.count_done)
        self._closed = False
        self.failures = self._here.failures
        """Tasks run here that raised; a child logs its own (said by this process)."""
        levels = {
            name: logger.level
            for name, logger in logging.Logger.manager.loggerDict.items()
            if isinstance(logger, logging.Logger) and logger.level
        } | {"": logging.getLogger().level}
        context = multiprocessing.get_context("spawn")
        self._processes: list[SpawnProcess] = [
            context.Process(
                target=_child_main,
                args=(serve, serve_args, Child(ends, threads, os.getpid(), levels)),
                name=f"labrxiv-worker-{index}",
                daemon=True,
            )
            for index, ends in enumerate(theirs)
        ]
        self._listener = threading.Thread(target=_say_logs, args=(logs,), daemon=True)
        _start(self._processes)
        for ends in theirs:  # the children's now: a child's death ends its pipes
            for end in [*ends.writers.values(), *ends.readers, *filter(None, [ends.log])]:
                end.close()
        self._listener.start()
        for index in range(processes):
            while not self._counts.flags[self._counts.ready(index)]:
                self._check()
                time.sleep(LOOK_S)

    def run_here(self, runner: Runner) -> None:
        """Run the tasks that run where sent with `runner(task, args)`."""
        self._here.start(runner)

    @property
    def processes(self) -> int:
        return len(self._processes)

    @property
    def stopped(self) -> bool:
        return self._counts.abandoned

    def send(self, task: str, *args: Any) -> None:
        if self.stopped:
            raise BusStopped(f"{task} was not sent: the bus was stopped")
        self._check()
        _route(self._post, self._here, task, args)

    def watch(self, died: Callable[[str], None]) -> None:
        """Call `died(why)` from a thread of its own if a child ends before it is told to
        (a campaign then stops as at Ctrl-C: `labrxiv resume` goes on with its runs)."""

        def look() -> None:
            while not self._closed:
                for process in self._processes:
                    if not self._closed and not process.is_alive():
                        died(_ended(process))
                        return
                time.sleep(LOOK_S)

        threading.Thread(target=look, name="labrxiv-fleet-watch", daemon=True).start()

    def join(self) -> None:
        """Wait until every task sent, and every task those sent, has run; `ChildDied`
        if a child ended (its tasks never will)."""
        while self._counts.pending() > 0:
            self._check()
            time.sleep(LOOK_S / 5)

    def abandon(self) -> int:
        """Stop at once (Ctrl-C): each child drops its queued tasks and lets its running
        ones end; returns when all have. Returns how many tasks were dropped unrun."""
        self._counts.flags[0] = 1
        dropped = self._here.abandon()
        for index, process in enumerate(self._processes):
            while not self._counts.flags[self._counts.stopped(index)] and process.is_alive():
                time.sleep(LOOK_S)
        self.close()
        return dropped

    def quit(self) -> None:
        """Stop without waiting for the tasks being run (Ctrl-C again): the children are
        terminated; what their steps had not recorded is taken again on resume."""
        self._counts.flags[0] = 1
        self._here.quit()
        self._closed = True
        for process in self._processes:
            process.terminate()

    def close(self) -> None:
        """Let the children run what they were sent, then end them."""
        if self._closed:
            return
        self._closed = True
        self._here.close()
        for index in range(self.processes):
            self._post.end(index)
        for process in self._processes:
            process.join()
        self._listener.join()

    def _check(self) -> None:
        for process in self._processes:
            if not process.is_alive() and not self._closed:
                raise ChildDied(_ended(process))


class Child:
    """What one child is given: its place in the fleet and its ends of the pipes."""

    def __init__(self, ends: Ends, threads: int, parent: int, levels: dict[str, int]) -> None:
        self.ends = ends
        self.counts = ends.counts
        self.index = ends.me
        self.threads = threads
        self.parent = parent
        self.levels = levels
        """The parent's logger levels, by name ("" the root's)."""
        self._post: Post | None = None

    @property
    def post(self) -> Post:
        if self._post is None:
            self._post = Post(self.ends)
        return self._post

    def bus(self, local: LocalBus) -> RoutedBus:
        """The bus this child's handlers send on."""
        return RoutedBus(local, self.post)

    def done(self) -> None:
        """One task of this child has run (or was dropped by `LocalBus.abandon`)."""
        self.post.count_done()

    def serve(self, local: LocalBus) -> None:
        """Feed what this child is sent to `local` (started) until told to end."""
        counts = self.counts
        threading.Thread(target=self._stop_when_abandoned, args=(local,), daemon=True).start()
        threading.Thread(target=self._end_with_parent, daemon=True).start()
        readers = list(self.ends.readers)
        counts.flags[counts.ready(self.index)] = 1
        while readers:
            for reader in wait(readers, timeout=PARENT_CHECK_S):
                assert isinstance(reader, Connection)
                try:
                    message = reader.recv()
                except (EOFError, OSError):  # its sender ended
                    readers.remove(reader)
                    continue
                if message is None:
                    local.close()
                    return
                if counts.abandoned:
                    self.done()  # dropped unrun, as the local bus drops its queue
                    continue
                task, args = message
                try:
                    local.send(task, *args)
                except BusStopped:
                    self.done()

    def _stop_when_abandoned(self, local: LocalBus) -> None:
        while not self.counts.abandoned:
            time.sleep(LOOK_S)
        local.abandon()
        self.counts.flags[self.counts.stopped(self.index)] = 1

    def _end_with_parent(self) -> None:
        while os.getppid() == self.parent:
            time.sleep(PARENT_CHECK_S)
        os._exit(1)


class _PipeQueue:
    """A `QueueHandler`'s queue that is a child's log pipe to its parent."""

    def __init__(self, end: Connection) -> None:
        self._end = end
        self._lock = threading.Lock()

    def put_nowait(self, record: logging.LogRecord) -> None:
        with self._lock:
            self._end.send(record)


def _say_logs(readers: list[Connection]) -> None:
    """Say the children's log records through this process's loggers, until every child
    has ended."""
    while readers:
        for reader in wait(readers):
            assert isinstance(reader, Connection)
            try:
                record = reader.recv()
            except (EOFError, OSError):
                readers.remove(reader)
                continue
            logging.getLogger(record.name).handle(record)


def _ended(process: SpawnProcess) -> str:
    code = process.exitcode
    how = f"killed by signal {-code}" if code is not None and code < 0 else f"exit code {code}"
    return f"worker process {process.name} ended ({how})"


def _start(processes: Sequence[SpawnProcess]) -> None:
    """Start the children with Ctrl-C ignored, as they keep it (an ignored signal stays
    ignored in the program a process executes): a Ctrl-C while a child imports would
    print its traceback; the parent handles it."""
    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if main else None
    try:
        for process in processes:
            process.start()
    finally:
        if main:
            signal.signal(signal.SIGINT, previous)


def _child_main(serve: Callable[..., None], serve_args: tuple[Any, ...], child: Child) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    assert child.ends.log is not None
    queue = _PipeQueue(child.ends.log)
    logging.getLogger().handlers[:] = [logging.handlers.QueueHandler(queue)]  # type: ignore[arg-type]
    for name, level in child.levels.items():
        logging.getLogger(name).setLevel(level)
    try:
        serve(*serve_args, child)
    except Exception as exc:  # said by the parent in one line, which then sees it ended
        log.error("worker process %d: %s: %s", child.index, type(exc).__name__, exc)
        logging.shutdown()
        raise SystemExit(1) from None
