"""The retry policy, written once: which faults are transient, and how long to wait.

A transient fault is the database or the broker being unreachable for a while: it says
nothing of the work, which succeeds once the fault is gone. It is retried with backoff
and never ends a run; every other exception is the lab's own error (a policy, tool or
bundle bug) and ends its run with `error`. With PostgreSQL terminating connections for
15 s, an `OperationalError` read in a step must not end a run for good.

Used by the task wrapper (`workers.app`: lab steps, the recorder, every handler), by
the lab step (`workers.lab.step` re-raises a transient fault for that wrapper), by the
LLM gateway (the wait before a model's next attempt, the same in lab steps and in
`workers.llm.in_place`) and by the campaign watcher (`labrxiv.campaigns`).
"""

import logging
import random
import sqlite3
import threading
from collections.abc import Callable
from dataclasses import dataclass

import kombu.exceptions
import psycopg
import redis.exceptions
import sqlalchemy.exc

from workers.backoff import backoff_seconds

log = logging.getLogger(__name__)

TRANSIENT: tuple[type[BaseException], ...] = (
    sqlalchemy.exc.OperationalError,  # refused, terminated, timed out; SQLite busy
    sqlalchemy.exc.InterfaceError,  # a connection found closed
    sqlalchemy.exc.DisconnectionError,
    sqlalchemy.exc.TimeoutError,  # no pooled connection free in time
    psycopg.OperationalError,
    psycopg.InterfaceError,
    redis.exceptions.ConnectionError,  # also BusyLoadingError: a Redis loading its data
    redis.exceptions.TimeoutError,
    kombu.exceptions.OperationalError,  # what Celery's send_task raises for a broker away
    ConnectionRefusedError,  # a socket's own errors; not BrokenPipeError, which a
    ConnectionResetError,  # pipe to a tool's subprocess raises as well
    ConnectionAbortedError,
)
"""Faults of the database or the broker: the same work succeeds once they are gone."""

RETRY_LATER_LIMIT = 12
"""Retries after which a handler that asked to be run later must handle its message
anyway (`final`, the 13th try): with the backoff's 30 s cap and full jitter, about
two minutes of waiting in all. Transient faults are not counted: they say nothing of
the message, and are retried for as long as they last."""


def is_transient(exc: BaseException) -> bool:
    """Whether `exc`, or an error it was raised from (`raise … from`), is a transient
    fault of the database or the broker (`TRANSIENT`, or a database error after which
    SQLAlchemy found the connection dead)."""
    seen: BaseException | None = exc
    for _ in range(16):  # a cause chain is short; never loop on a cycle
        if seen is None:
            return False
        if isinstance(seen, TRANSIENT):
            return not _sqlite_for_good(seen)
        if isinstance(seen, sqlalchemy.exc.DBAPIError) and seen.connection_invalidated:
            return True
        seen = seen.__cause__
    return False


@dataclass(frozen=True)
class RetryPolicy:
    """How long to wait before trying again: what the other side asked for, capped,
    else exponential backoff with full jitter."""

    base_s: float = 0.5
    """The first backoff's ceiling (attempt 0); it doubles with each attempt."""
    cap_s: float = 30.0
    """No backoff is drawn above this."""
    max_retry_after_s: float = 60.0
    """A provider's `retry-after` is honoured up to this."""

    def wait(self, attempt: int, retry_after_s: float | None = None, key: str = "") -> float:
        """Seconds to wait after try number `attempt` failed.

        With a `key`, the jitter is drawn from (key, attempt): any process computing the
        wait of the same failure gets the same number, so a step delivered again waits
        until the same moment, not a fresh draw later."""
        if retry_after_s is not None:
            return min(max(0.0, retry_after_s), self.max_retry_after_s)
        rng = random.Random(f"{key}:{attempt}") if key else None
        return backoff_seconds(attempt, self.base_s, self.cap_s, rng)


DEFAULT = RetryPolicy()
"""The policy of the task wrapper and the campaign watcher; the LLM gateway takes its
numbers from its settings."""


def keep_going(
    name: str,
    work: Callable[[], float],
    stop: threading.Event,
    policy: RetryPolicy = DEFAULT,
) -> None:
    """Call `work` until `stop` is set, waiting the seconds it returns before the next
    call: the loop of a process that follows the log (`labrxiv reactor`, `labrxiv
    projector`). A transient fault (`is_transient`) is logged as `name`'s and tried again
    after `policy`'s wait, for as long as it lasts; any other error is a bug and stops
    the loop (looping on it would hide it, and hold up all that comes after)."""
    failures = 0
    while not stop.is_set():
        try:
            wait = work()
            failures = 0
        except Exception as exc:
            if not is_transient(exc):
                raise
            wait = policy.wait(failures)
            failures += 1
            said = str(exc).strip().splitlines()
            log.warning(
                "%s: %s: %s (%d in a row); trying again in %.1fs",
                name,
                type(exc).__name__,
                said[0] if said else "",
                failures,
                wait,
            )
        stop.wait(wait)


SQLITE_FOR_GOOD = ("readonly", "no such ", "has no column", "is full", "syntax error")
"""What a SQLite `OperationalError` says when waiting does not mend it: a read-only file,
a missing table or column, a full disk, bad SQL. They stay until someone acts: retried
for ever, an embedded campaign hung until its `--timeout`, saying nothing but a retry
line a second. Its other errors (locked, busy, a disk I/O error) pass."""


def _sqlite_for_good(exc: BaseException) -> bool:
    """Whether `exc` is a SQLite error that waiting does not mend."""
    original = getattr(exc, "orig", exc)
    if not isinstance(original, sqlite3.OperationalError):
        return False
    said = str(original).lower()
    return any(words in said for words in SQLITE_FOR_GOOD)
