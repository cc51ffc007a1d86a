"""The registry of task handlers: name → (function, queue). Both buses run these."""

from collections.abc import Callable
from typing import Any

from workers.bus.base import RECORD_TASK
from workers.context import WorkerContext
from workers.lab.step import LAB_STEP_TASK, lab_step
from workers.recorder import record_message

Handler = Callable[..., Any]
"""`handler(ctx, *args)`: must be safe to run twice with the same arguments."""

HANDLERS: dict[str, tuple[Handler, str]] = {
    RECORD_TASK: (record_message, "events"),
    LAB_STEP_TASK: (lab_step, "steps"),
}
"""Every task a worker can run, with the queue it is routed to."""


def run_handler(ctx: WorkerContext, task: str, args: tuple[Any, ...]) -> Any:
    """Run one task by name (used by the local bus and by tests)."""
    handler, _queue = HANDLERS[task]
    return handler(ctx, *args)
