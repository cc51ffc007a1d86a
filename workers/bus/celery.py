"""The Celery bus: tasks travel on Redis to worker processes on any machine."""

from typing import Any

from celery import Celery

from workers.handlers import HANDLERS


class CeleryBus:
    """Sends tasks by name to their queues through a Celery app (no result backend)."""

    stopped = False
    """Never stopped: its workers go on when the sending process ends."""

    def __init__(self, app: Celery) -> None:
        self.app = app

    def send(self, task: str, *args: Any) -> None:
        """Publish `task(*args)` to its queue."""
        _handler, queue = HANDLERS[task]
        self.app.send_task(task, args=list(args), queue=queue)

    def close(self) -> None:
        """Nothing to release by hand.

        kombu keeps producer pools in a process-wide registry keyed by broker URL;
        force-closing them here broke the next bus opened on the same URL in this
        process ("Acquire on closed pool"). They go with the process.
        """
