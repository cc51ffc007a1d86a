"""The registry of task handlers: name → (function, queue). Both buses run these.

A handler's message arguments are its positional parameters after the context that
have no default, typed by their annotations; a parameter with a default (`final`) is
the bus's to pass. Arguments that do not fit are not run: they are dead-lettered
with what does not fit (`argument_problem`, `dead_letter_task`), on either bus.
"""

import inspect
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from functools import cache
from typing import Any

from pydantic import ConfigDict, TypeAdapter, ValidationError

from workers.bus.base import RECORD_TASK
from workers.bus.dead_letters import DEAD_LETTER_TASK, RAW_LIMIT
from workers.context import WorkerContext
from workers.lab.step import LAB_STEP_TASK, lab_step
from workers.metrics import count_dead_letter
from workers.recorder import record_dead_letter, record_message
from workers.review.steps import REVIEW_STEP_TASK, review_step
from workers.review.task import REVIEW_TASK, review_paper

log = logging.getLogger(__name__)

Handler = Callable[..., Any]
"""`handler(ctx, *args)`: must be safe to run twice with the same arguments."""

HANDLERS: dict[str, tuple[Handler, str]] = {
    RECORD_TASK: (record_message, "events"),
    DEAD_LETTER_TASK: (record_dead_letter, "events"),
    LAB_STEP_TASK: (lab_step, "steps"),
    REVIEW_TASK: (review_paper, "reviews"),
    REVIEW_STEP_TASK: (review_step, "reviews"),
}
"""Every task a worker can run, with the queue it is routed to."""


def run_handler(ctx: WorkerContext, task: str, args: tuple[Any, ...]) -> Any:
    """Run one task by name (used by the local bus and by tests); arguments that do
    not fit its handler are dead-lettered instead."""
    handler, queue = HANDLERS[task]
    problem = argument_problem(handler, args)
    if problem is not None:
        dead_letter_task(ctx, f"{queue} queue: {task}", f"wrong arguments: {problem}", args, {})
        return None
    return handler(ctx, *args)


def argument_problem(handler: Handler, args: Sequence[Any]) -> str | None:
    """Why `args` (as a message carried them) do not fit `handler`, or None."""
    names, adapter = _signature(handler)
    if not isinstance(args, list | tuple):
        return f"the arguments are a {type(args).__name__}, not a list"
    if len(args) != len(names):
        return f"takes {len(names)} ({', '.join(names)}), got {len(args)}"
    try:
        adapter.validate_python(tuple(args))
    except ValidationError as exc:
        return "; ".join(
            f"{names[int(err['loc'][0])] if err['loc'] else '?'}: {err['msg']}"
            for err in exc.errors()
        )
    return None


@cache
def _signature(handler: Handler) -> tuple[list[str], TypeAdapter[Any]]:
    """The names of `handler`'s message arguments and a strict validator of them."""
    params = list(inspect.signature(handler, eval_str=True).parameters.values())[1:]
    wanted = [
        p
        for p in params
        if p.default is inspect.Parameter.empty
        and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    types = tuple(p.annotation for p in wanted)
    # Strict: a message's JSON gives the exact types, and 1 is not "1" nor True an int.
    shape: Any = tuple[types] if types else tuple[()]  # type: ignore[valid-type]
    return [p.name for p in wanted], TypeAdapter(shape, config=ConfigDict(strict=True))


def dead_letter_task(
    ctx: WorkerContext, where: str, problem: str, args: Any, kwargs: Mapping[str, Any]
) -> None:
    """Keep a task message that its handler could not run, with `where` it was (queue
    and task) and the reason, in the table (through this worker's store)."""
    log.warning("dead letter: %s: %s", where, problem)
    raw = json.dumps({"args": args, "kwargs": dict(kwargs)}, ensure_ascii=False, default=repr)
    ctx.store.dead_letter(f"{where}: {problem}", raw[:RAW_LIMIT])
    count_dead_letter(problem)
