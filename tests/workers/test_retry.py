"""The retry policy (workers/retry.py): which faults are transient, how long to wait, and
the task wrapper that retries them whatever the handler (only the lab's own
errors may end a run; a database or broker fault is waited out)."""

import logging
import sqlite3
from typing import Any

import kombu.exceptions
import psycopg
import pytest
import redis.exceptions
from celery import Celery
from sqlalchemy.exc import (
    DBAPIError,
    IntegrityError,
    InterfaceError,
    OperationalError,
    ProgrammingError,
)

from workers.app import _register
from workers.errors import RetryLater, WorkerError
from workers.lab.step import LAB_STEP_TASK
from workers.retry import DEFAULT, RetryPolicy, is_transient
from workers.tools.base import ToolError


def _sa(kind: type[DBAPIError], cause: Exception) -> DBAPIError:
    return kind("SELECT 1", {}, cause)


def _raised_from(cause: Exception) -> Exception:
    try:
        try:
            raise cause
        except Exception as exc:
            raise WorkerError("reading the archive failed") from exc
    except WorkerError as wrapped:
        return wrapped


TRANSIENT = {
    "postgres terminated": _sa(
        OperationalError, psycopg.OperationalError("terminating connection due to admin")
    ),
    "connection closed": _sa(InterfaceError, psycopg.InterfaceError("the connection is closed")),
    "sqlite busy": _sa(OperationalError, sqlite3.OperationalError("database is locked")),
    "sqlite disk i/o": _sa(OperationalError, sqlite3.OperationalError("disk I/O error")),
    "sqlite table busy": _sa(
        OperationalError, sqlite3.OperationalError("database table is locked: events")
    ),
    "psycopg itself": psycopg.OperationalError("connection refused"),
    "redis away": redis.exceptions.ConnectionError("Error 111 connecting to 127.0.0.1:6379"),
    "redis loading": redis.exceptions.BusyLoadingError("Redis is loading the dataset"),
    "redis timeout": redis.exceptions.TimeoutError("Timeout reading from socket"),
    "broker via celery": kombu.exceptions.OperationalError("Error 111: Connection refused"),
    "socket refused": ConnectionRefusedError(111, "Connection refused"),
    "socket reset": ConnectionResetError(104, "Connection reset by peer"),
    "raised from a fault": _raised_from(_sa(OperationalError, Exception("server closed"))),
}
LABS_OWN = {
    "a policy bug": KeyError("config"),
    "a value": ValueError("bad config"),
    "a tool error": ToolError("no such file"),
    "a worker error": WorkerError("no policy 'x'"),
    "a constraint": _sa(IntegrityError, Exception("duplicate key")),
    "bad SQL": _sa(ProgrammingError, Exception("syntax error")),
    "a pipe to a tool": BrokenPipeError(32, "Broken pipe"),
    "a missing file": FileNotFoundError(2, "No such file"),
    # SQLite errors that waiting does not mend: retried, an embedded campaign hung
    "sqlite read-only": _sa(
        OperationalError, sqlite3.OperationalError("attempt to write a readonly database")
    ),
    "sqlite full": _sa(OperationalError, sqlite3.OperationalError("database or disk is full")),
    "sqlite no table": _sa(OperationalError, sqlite3.OperationalError("no such table: events")),
}


@pytest.mark.parametrize("exc", TRANSIENT.values(), ids=TRANSIENT.keys())
def test_faults_of_the_database_and_the_broker_are_transient(exc: Exception) -> None:
    assert is_transient(exc)


@pytest.mark.parametrize("exc", LABS_OWN.values(), ids=LABS_OWN.keys())
def test_the_labs_own_errors_are_not(exc: Exception) -> None:
    assert not is_transient(exc)


def test_a_database_error_that_left_the_connection_dead_is_transient() -> None:
    """SQLAlchemy marks a disconnect it recognises, whatever the error class."""
    exc = _sa(DBAPIError, Exception("SSL connection has been closed unexpectedly"))
    assert not is_transient(exc)
    exc.connection_invalidated = True
    assert is_transient(exc)


def test_the_wait_honours_retry_after_up_to_its_cap_else_backs_off() -> None:
    policy = RetryPolicy(base_s=0.5, cap_s=4.0, max_retry_after_s=10.0)
    assert policy.wait(1, retry_after_s=2.0) == 2.0
    assert policy.wait(1, retry_after_s=3600.0) == 10.0
    assert policy.wait(1, retry_after_s=-1.0) == 0.0
    for attempt in range(8):
        ceiling = min(4.0, 0.5 * 2**attempt)
        waits = [policy.wait(attempt, key=f"call-{i}") for i in range(200)]
        assert all(0 <= wait <= ceiling for wait in waits)
        assert max(waits) > ceiling / 2, "full jitter: the whole range is drawn from"


def test_the_same_failure_waits_the_same_in_any_process() -> None:
    """With a key, the jitter is the key's: a step taken again waits until the same moment."""
    assert DEFAULT.wait(3, key="run-1:7/3") == DEFAULT.wait(3, key="run-1:7/3")
    assert len({DEFAULT.wait(3, key=f"run-1:{i}/3") for i in range(50)}) > 40


# -- the task wrapper ------------------------------------------------------------------


def eager_task(handler: Any) -> Any:
    """`handler`, taking a step's arguments, as the lab step task of an app of its own
    that runs tasks (and their retries) in place."""
    app = Celery("retry-test", broker="memory://")
    app.conf.task_always_eager = True
    _register(app, lambda: None, LAB_STEP_TASK, handler, "steps")  # type: ignore[arg-type, return-value]
    return app.tasks[LAB_STEP_TASK]


@pytest.mark.parametrize("fault", TRANSIENT.values(), ids=TRANSIENT.keys())
def test_the_task_wrapper_retries_a_transient_fault_until_it_is_gone(fault: Exception) -> None:
    """Steps, the recorder, every handler: a database or broker fault never fails the
    task; it is run again (from the log) until the fault is over."""
    calls: list[str] = []

    def handler(ctx: Any, stream: str, version: int) -> None:
        calls.append(stream)
        if len(calls) <= 5:
            raise fault

    assert eager_task(handler).apply(args=("run-a", 3)).successful()
    assert calls == ["run-a"] * 6


@pytest.mark.parametrize("bug", LABS_OWN.values(), ids=LABS_OWN.keys())
def test_the_task_wrapper_does_not_retry_a_bug(bug: Exception) -> None:
    calls: list[str] = []

    def handler(ctx: Any, stream: str, version: int) -> None:
        calls.append(stream)
        raise bug

    eager_task(handler).apply(args=("run-a", 3))
    assert calls == ["run-a"]  # what becomes of it is not a retry


def test_a_handler_that_knows_how_long_to_wait_is_retried_after_that_long(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The model's next attempt is due in 2.5 s: the step asks to be run then, instead of
    sleeping in its worker."""
    finals: list[bool] = []

    def handler(ctx: Any, stream: str, version: int, final: bool = True) -> None:
        finals.append(final)
        if len(finals) == 1:
            raise RetryLater("the next attempt is due", delay_s=2.5)

    caplog.set_level(logging.INFO, logger="workers.app")
    assert eager_task(handler).apply(args=("run-a", 3)).successful()
    assert finals == [False, False]
    (said,) = [r for r in caplog.records if "not yet" in r.getMessage()]
    assert said.args is not None and said.args[-1] == 2.5  # type: ignore[index]
