"""The Celery bus: tasks travel on Redis to worker processes on any machine."""

from typing import Any

from celery import Celery

from workers.handlers import HANDLERS


class CeleryBus:
    """Sends tasks by name to their queues through a Celery app (no result backend)."""

    def __init__(self, app: Celery) -> None:
        self.app = app

    def send(self, task: str, *args: Any) -> None:
        """Publish `task(*args)` to its queue."""
        _handler, queue = HANDLERS[task]
        self.app.send_task(task, args=list(args), queue=queue)

    def close(self) -> None:
        """Release the broker connection pool."""
        self.app.pool.force_close_all()
