"""The Celery app on Redis, configured for at-least-once delivery.

Why these settings (see ../shared/REFERENCE.md, "Celery on Redis"):
- `task_acks_late` + `task_reject_on_worker_lost`: a message is acknowledged after its
  task ran. A prefork pool child killed mid-task (SIGKILL, OOM): the worker puts the
  message back on the queue at once, at its back (without the second setting it
  would ack it, and the task would be lost). The whole worker killed (or a solo or
  threads worker): the message stays unacked until the visibility timeout.
- `visibility_timeout`: how long an unacked message waits before redelivery. A task
  that runs longer is delivered twice (kombu #337, celery #4400): handlers are
  idempotent, so that costs time, not correctness. An agent's session is one task for
  up to the run's whole wall time: its second delivery finds the run moved on, or the
  session's lease (`workers.lab.lease.SESSION`: `Taken`), and does nothing.
- Not covered: a worker killed after kombu's BRPOP took a message and before it
  recorded it as unacked loses it (measured: ~40% of kills in the ~30 ms after a
  1.7 MB batch commits; tests/workers/measure_brpop_window.py). The log, not the
  broker, is the truth: a run that stops moving there is resumed by the reaper
  (workers/lab/reaper.py).
- Redelivery reorders messages: two messages of one stream in flight together can
  arrive later part first. The recorder then asks to be run again later
  (`StreamBehind`, retried with backoff for about two minutes) and records the later
  part once the earlier one is in; past that it dead-letters it as a version conflict.
- `worker_prefetch_multiplier=1`: a busy worker does not hoard messages that an idle
  one could take.
- Nothing on a queue can stop a worker: the Redis channel hands on an item
  it cannot read as an "unreadable" message (workers/bus/gate.py); the consumer
  (`worker_consumer`, workers/bus/consumer.py) dead-letters any message that is not a
  task it can run; the task dead-letters arguments that do not fit its handler, and a
  message its handler raised on.
"""

import inspect
import logging
import time
from collections.abc import Callable
from typing import Any

from celery import Celery, Task
from celery.signals import worker_process_shutdown

from workers.bus.broker import broker
from workers.context import WorkerContext
from workers.errors import RetryLater
from workers.handlers import HANDLERS, argument_problem, dead_letter_task
from workers.metrics import count_redelivery, count_retry, known_task, observe_task
from workers.retry import DEFAULT, RETRY_LATER_LIMIT, is_transient
from workers.sandbox.cgroup import finish_removals

log = logging.getLogger(__name__)

ContextProvider = Callable[[], WorkerContext]


@worker_process_shutdown.connect(weak=False)
def _pool_child_exiting(**_: Any) -> None:
    """A pool child ends with `os._exit`, which waits for no thread: the cgroups of its
    last tool calls are removed first (`workers.sandbox.cgroup`)."""
    finish_removals()


def make_celery(redis_url: str, visibility_timeout: int) -> Celery:
    """A Celery app on `redis_url` with labrxiv's delivery settings (no tasks yet)."""
    to = broker(redis_url)
    app = Celery("labrxiv", broker=to.url, set_as_current=False)
    if to.transport is not None:
        app.conf.broker_transport = to.transport
    if to.ssl is not None:
        app.conf.broker_use_ssl = to.ssl
    app.conf.update(
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        task_serializer="json",
        accept_content=["json"],
        task_ignore_result=True,
        task_default_queue="steps",
        broker_transport_options={
            "visibility_timeout": visibility_timeout,
            # kombu 5.7 looks for expired unacked messages every
            # `unacked_restore_interval` s (default 10) but scans only on every
            # `unacked_restore_throttle`-th look (default 10): a message left by a killed
            # worker came back ~100 s late, whatever the visibility timeout (measured:
            # 4 s timeout, redelivered 90 s after the restart). Scan on every look.
            "unacked_restore_interval": restore_interval(visibility_timeout),
            "unacked_restore_throttle": 1,
        },
        broker_connection_retry_on_startup=True,
        worker_hijack_root_logger=False,
        worker_send_task_events=False,
        worker_consumer="workers.bus.consumer:DeadLetteringConsumer",
    )
    return app


def restore_interval(visibility_timeout: int) -> int:
    """Seconds between sweeps for unacked messages: a killed worker's message is put
    back at most this long after its visibility timeout (half of it, 1 to 10 s)."""
    return max(1, min(10, visibility_timeout // 2))


def register_tasks(app: Celery, context: ContextProvider) -> None:
    """Register every handler of `workers.handlers` as a Celery task of `app`.

    A transient fault (the database or the broker away, `workers.retry`) is retried
    with backoff for as long as it lasts (the message stays on the queue meanwhile).
    Arguments that do not fit the handler, and any other exception it raises (a bug,
    or a message it cannot cope with), dead-letter the message with the reason: the
    task ends and the worker goes on; nothing is dropped with only a log line.
    """
    for name, (handler, queue) in HANDLERS.items():
        _register(app, context, name, handler, queue)


def _register(
    app: Celery, context: ContextProvider, name: str, handler: Callable[..., Any], queue: str
) -> None:
    takes_final = "final" in inspect.signature(handler).parameters
    known_task(name)

    # shared=False: Celery otherwise lends a task to every app made later in the process,
    # and a second app (tests make several) could run the first one's handler context.
    @app.task(name=name, bind=True, queue=queue, max_retries=None, shared=False)
    def task(self: Task, *args: Any, **kwargs: Any) -> None:
        """`later` (the only keyword): how many times the handler asked to be run later
        (`RetryLater`); counted apart from transient faults' retries, which say nothing
        of the message. Arguments that do not fit the handler are dead-lettered."""
        later = kwargs.get("later", 0)
        started = time.perf_counter()
        if (self.request.delivery_info or {}).get("redelivered"):
            count_redelivery(name)
        try:
            ctx = context()
            problem = argument_problem(handler, args) or _keywords_problem(kwargs)
            if problem is not None:
                where = f"{queue} queue: {name}"
                dead_letter_task(ctx, where, f"wrong arguments: {problem}", list(args), kwargs)
                observe_task(name, "dead_lettered", started)
                return
            extra = {"final": later >= RETRY_LATER_LIMIT} if takes_final else {}
            handler(ctx, *args, **extra)
            observe_task(name, "done", started)
        except RetryLater as exc:
            delay = DEFAULT.wait(later) if exc.delay_s is None else exc.delay_s
            log.info("%s: not yet (%s), retrying in %.1fs", name, exc, delay)
            count_retry(name, "later")
            observe_task(name, "retried", started)
            counted = later + 1 if exc.counted else later
            raise self.retry(exc=exc, countdown=delay, kwargs={"later": counted}) from exc
        except Exception as exc:
            if not is_transient(exc):
                # A bug, or a message the handler cannot cope with: keep the message
                # with the reason rather than let Celery log it and drop it.
                log.exception("%s: the handler raised", name)
                problem = f"the handler raised {type(exc).__name__}: {exc}"
                where = f"{queue} queue: {name}"
                dead_letter_task(context(), where, problem, list(args), kwargs)
                observe_task(name, "dead_lettered", started)
                return
            delay = DEFAULT.wait(self.request.retries)
            log.warning("%s: database or broker away, retrying in %.1fs: %s", name, delay, exc)
            count_retry(name, "transient")
            observe_task(name, "retried", started)
            raise self.retry(exc=exc, countdown=delay, kwargs={"later": later}) from exc


def _keywords_problem(kwargs: dict[str, Any]) -> str | None:
    """Why a task's keywords are not the wrapper's own (`later`, a count), or None."""
    unknown = sorted(set(kwargs) - {"later"})
    if unknown:
        return f"unknown keyword arguments {unknown}"
    later = kwargs.get("later", 0)
    if type(later) is not int or later < 0:
        return f"later: {later!r} is not a count of retries"
    return None
