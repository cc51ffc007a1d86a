"""The Celery app on Redis, configured for at-least-once delivery.

Why these settings (see ../shared/REFERENCE.md, "Celery on Redis"):
- `task_acks_late` + `task_reject_on_worker_lost`: a worker killed mid-task (SIGKILL,
  OOM) leaves its message unacked, so it is delivered again; without the second, a
  task whose process dies by signal is acked and lost.
- `visibility_timeout`: how long an unacked message waits before redelivery. A task
  that runs longer is delivered twice (kombu #337, celery #4400): handlers are
  idempotent, so that costs time, not correctness.
- `worker_prefetch_multiplier=1`: a busy worker does not hoard messages that an idle
  one could take.
"""

import logging
from collections.abc import Callable
from typing import Any

from celery import Celery, Task
from sqlalchemy.exc import OperationalError

from workers.backoff import backoff_seconds
from workers.context import WorkerContext
from workers.handlers import HANDLERS

log = logging.getLogger(__name__)

ContextProvider = Callable[[], WorkerContext]


def make_celery(redis_url: str, visibility_timeout: int) -> Celery:
    """A Celery app on `redis_url` with labrxiv's delivery settings (no tasks yet)."""
    app = Celery("labrxiv", broker=redis_url, set_as_current=False)
    app.conf.update(
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        task_serializer="json",
        accept_content=["json"],
        task_ignore_result=True,
        task_default_queue="steps",
        broker_transport_options={"visibility_timeout": visibility_timeout},
        broker_connection_retry_on_startup=True,
        worker_hijack_root_logger=False,
        worker_send_task_events=False,
    )
    return app


def register_tasks(app: Celery, context: ContextProvider) -> None:
    """Register every handler of `workers.handlers` as a Celery task of `app`.

    A database that is down is retried with backoff (the message stays on the
    queue meanwhile); any other exception is a bug and is logged by Celery.
    """
    for name, (handler, queue) in HANDLERS.items():
        _register(app, context, name, handler, queue)


def _register(
    app: Celery, context: ContextProvider, name: str, handler: Callable[..., Any], queue: str
) -> None:
    @app.task(name=name, bind=True, queue=queue, max_retries=None)
    def task(self: Task, *args: Any) -> None:
        try:
            handler(context(), *args)
        except OperationalError as exc:
            delay = backoff_seconds(self.request.retries)
            log.warning("%s: database unavailable, retrying in %.1fs: %s", name, delay, exc)
            raise self.retry(exc=exc, countdown=delay) from exc
