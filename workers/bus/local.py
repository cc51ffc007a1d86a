"""The in-process bus: the embedded default, needing no Redis.

Tasks go on a `queue.Queue` and run on worker threads in this process, through the
same handlers that Celery runs, so `labrxiv demo` on a bare machine exercises the
same write path as a cluster. A transient fault (`workers.retry`: the database busy or
away) is retried on the same thread with the one retry policy's backoff, as the Celery
wrapper retries it, in a line of the log and no traceback; any other exception is logged
and counted, never lost silently; there is no redelivery (the process is the failure
domain). Once the bus is stopped (`abandon`, at Ctrl-C), `send` raises `BusStopped`,
and a running task that sent ends there, quietly and uncounted, as the queued ones are
dropped.
"""

import logging
import queue
import threading
import time
from collections.abc import Callable
from typing import Any

from workers.bus.base import BusStopped
from workers.metrics import count_retry, observe_task
from workers.retry import DEFAULT, RetryPolicy, is_transient

log = logging.getLogger(__name__)

Runner = Callable[[str, tuple[Any, ...]], Any]

QUIET_RETRIES = 3
"""Retries of a transient fault said at INFO: a moment's contention is no news; a fault
still there after this many waits (a few seconds) is a WARNING each time."""


class LocalBus:
    """Runs sent tasks on `threads` background threads of this process."""

    def __init__(
        self,
        threads: int = 1,
        retry: RetryPolicy = DEFAULT,
        on_done: Callable[[], None] | None = None,
    ) -> None:
        self._retry = retry
        """The wait before a task that raised a transient fault runs again."""
        self._on_done = on_done
        """Called once for each task when it has run or been dropped (`workers.bus.processes`
        counts a fleet's tasks so)."""
        self._queue: queue.Queue[tuple[str, tuple[Any, ...]] | None] = queue.Queue()
        self._threads_wanted = threads
        self._threads: list[threading.Thread] = []
        self._runner: Runner | None = None
        self.failures: list[tuple[str, BaseException]] = []
        """Tasks that raised, with the exception (for the caller to report)."""
        self._abandoned = threading.Event()
        self._sending = threading.Lock()
        """Held to queue a task and to stop: nothing is queued once `abandon` began."""

    def start(self, runner: Runner) -> None:
        """Begin running tasks with `runner(task, args)`."""
        self._runner = runner
        for index in range(self._threads_wanted):
            thread = threading.Thread(target=self._loop, name=f"labrxiv-local-{index}", daemon=True)
            thread.start()
            self._threads.append(thread)

    @property
    def stopped(self) -> bool:
        """Whether the bus was abandoned (`abandon`)."""
        return self._abandoned.is_set()

    def send(self, task: str, *args: Any) -> None:
        """Queue a task; it runs on a bus thread. Once the bus is abandoned, `BusStopped`:
        the sender learns it was not sent (a lab step then gives its lease back instead
        of saying its events were sent)."""
        with self._sending:
            if self._abandoned.is_set():
                raise BusStopped(f"{task} was not sent: the bus was stopped")
            self._queue.put((task, args))

    def join(self) -> None:
        """Wait until every queued task (and what they queued) has run."""
        self._queue.join()

    def close(self) -> None:
        """Stop the threads after the queue drains."""
        for _ in self._threads:
            self._queue.put(None)
        for thread in self._threads:
            thread.join()
        self._threads.clear()

    def quit(self) -> None:
        """Stop without waiting for the tasks being run (Ctrl-C again, after `abandon`
        began): their threads, daemons, end with the process, and what their steps had
        not recorded is taken again from the log on resume."""
        self._abandoned.set()
        self._threads.clear()

    def abandon(self) -> int:
        """Stop at once (Ctrl-C): queued tasks are dropped unrun, and a running task that
        sends gets `BusStopped` and ends there; the tasks being run are let finish, and
        the threads end. Returns how many queued tasks were dropped. What is dropped is
        safe to lose: a step's events that were not recorded are taken again from the log
        when the run is resumed."""
        with self._sending:
            self._abandoned.set()
        dropped = 0
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            dropped += item is not None
            self._done(item)
        self.close()
        return dropped

    def _loop(self) -> None:
        while True:
            item = self._queue.get()
            try:
                if item is None:
                    return
                if self._abandoned.is_set():
                    continue  # dropped unrun (`abandon`)
                task, args = item
                self._run(task, args)
            finally:
                self._done(item)

    def _done(self, item: tuple[str, tuple[Any, ...]] | None) -> None:
        self._queue.task_done()
        if item is not None and self._on_done is not None:
            self._on_done()

    def _run(self, task: str, args: tuple[Any, ...]) -> None:
        """Run one task, again after a wait for as long as it raises a transient fault."""
        assert self._runner is not None
        attempt = 0
        while True:
            started = time.perf_counter()
            try:
                self._runner(task, args)
            except BusStopped:
                return  # stopped while it ran: it ends there, as the queued ones do
            except Exception as exc:  # a handler bug must not kill the bus thread
                if not is_transient(exc):
                    log.exception("task %s failed", task)
                    self.failures.append((task, exc))
                    observe_task(task, "failed", started)
                    return
                delay = self._retry.wait(attempt)
                said = str(exc).strip().splitlines()
                log.log(
                    logging.INFO if attempt < QUIET_RETRIES else logging.WARNING,
                    "%s: database or broker away, retrying in %.1fs: %s",
                    task,
                    delay,
                    said[0] if said else type(exc).__name__,
                )
                count_retry(task, "transient")
                observe_task(task, "retried", started)
                attempt += 1
                if self._abandoned.wait(delay):
                    return  # stopped while it waited: dropped, as the queued ones are
            else:
                observe_task(task, "done", started)
                return
