"""The Celery task wrapper: a handler that asks to be run later (`RetryLater`) is
retried, and on the last retry it is told to handle its message anyway (`final`)."""

from typing import Any

from celery import Celery
from sqlalchemy.exc import OperationalError

from workers.app import RETRY_LATER_LIMIT, _register
from workers.errors import RetryLater, StreamBehind


def eager_task(handler: Any) -> Any:
    """`handler` as a task of an app that runs tasks (and their retries) in place.
    Named after the handler: Celery shares tasks of one name between apps."""
    app = Celery("retry-later-test", broker="memory://")
    app.conf.task_always_eager = True
    name = f"test.{handler.__qualname__}"
    _register(app, lambda: None, name, handler, "events")  # type: ignore[arg-type, return-value]
    return app.tasks[name]


def test_a_handler_behind_is_retried_then_told_it_is_the_last_try() -> None:
    finals: list[bool] = []

    def handler(ctx: Any, message: str, final: bool = True) -> None:
        finals.append(final)
        if not final:
            raise StreamBehind("run-a is at version 0, the message starts at 2")

    assert eager_task(handler).apply(args=("message",)).successful()
    assert finals == [False] * RETRY_LATER_LIMIT + [True]


def test_database_retries_do_not_use_up_the_tries_of_a_stream_behind() -> None:
    """An outage's retries say nothing of the message: after them, a stream behind still
    gets all its tries."""
    calls: list[str] = []

    def handler(ctx: Any, message: str, final: bool = True) -> None:
        if len(calls) < 20:
            calls.append("database down")
            raise OperationalError("SELECT 1", {}, Exception("connection refused"))
        calls.append(f"final={final}")
        if not final:
            raise StreamBehind("behind")

    assert eager_task(handler).apply(args=("message",)).successful()
    assert calls[20:] == ["final=False"] * RETRY_LATER_LIMIT + ["final=True"]


def test_waits_on_another_workers_work_do_not_use_up_the_tries() -> None:
    """A step being taken elsewhere (`workers.lab.lease.Held`) may rightly wait as long
    as that step runs: its waits are not counted toward the last try."""
    calls: list[str] = []

    def handler(ctx: Any, message: str, final: bool = True) -> None:
        if len(calls) < 2 * RETRY_LATER_LIMIT:
            calls.append(f"held, final={final}")
            raise RetryLater("being taken elsewhere", delay_s=0, counted=False)
        calls.append(f"final={final}")
        if not final:
            raise StreamBehind("behind")

    assert eager_task(handler).apply(args=("message",)).successful()
    assert set(calls[: 2 * RETRY_LATER_LIMIT]) == {"held, final=False"}
    assert calls[2 * RETRY_LATER_LIMIT :] == ["final=False"] * RETRY_LATER_LIMIT + ["final=True"]


def test_a_handler_without_final_is_called_as_before() -> None:
    seen: list[tuple[Any, ...]] = []

    def handler(ctx: Any, stream: str, version: int) -> None:
        seen.append((stream, version))

    assert eager_task(handler).apply(args=("run-a", 3)).successful()
    assert seen == [("run-a", 3)]
