"""The Celery consumer of a labrxiv worker: a message it cannot run is dead-lettered.

Celery's own consumer logs and drops what it cannot run (a body it cannot decode, a
message without a task header, an unknown task, an invalid one), and a message that
breaks its task strategy raises out of its event loop (measured on kombu/Celery 5.7:
a body `[1, 2]` stopped the worker, `Unrecoverable error: ValueError`; a message
without an `id` header raised a KeyError, which kombu's Redis transport counts as a
lost connection, so the worker reconnected and took the same message again every
second, for ever). This consumer (installed by `worker_consumer`, workers/app.py):
- checks each message before Celery's strategy reads it (`task_message_problem`);
- overrides Celery's hooks for what it cannot run (`on_decode_error`,
  `on_unknown_message`, `on_unknown_task`, `on_invalid_task`);
- catches whatever else the strategy raises on a message, as a last resort.
Each such message is sent to the recorder as a `labrxiv.dead_letter` task, with the
queue, the reason and the body's bytes (for an item the Redis channel could not read,
the item's bytes: workers/bus/gate.py), and acknowledged once that is sent. This runs
in the worker's main process, which has no store (workers/bus/dead_letters.py).
"""

import logging
from datetime import datetime
from typing import Any

from celery.worker.consumer import Consumer
from kombu.message import Message
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from workers.bus.dead_letters import DEAD_LETTER_TASK, cut, for_transit
from workers.bus.gate import REASON_HEADER, UNREADABLE

log = logging.getLogger(__name__)

_EMBED_KEYS = {"callbacks", "errbacks", "chain", "chord"}


class TaskHeaders(BaseModel):
    """The headers of a Celery 5.7 protocol-2 task message as labrxiv's producers send
    them (`send_task`, a task's retry, kombu's restore). Celery's worker reads them
    without checking their types (celery/worker/request.py, strategy.py), so a wrong
    type stops it; a header labrxiv never sends (a time limit, an expiry) would make
    Celery kill or discard the task without a trace, so it is refused here instead."""

    model_config = ConfigDict(extra="forbid", strict=True)

    task: str
    """The task's name."""
    id: str = Field(min_length=1)
    """The task id (Celery keys its bookkeeping by it)."""
    lang: str | None = None
    """The producer's language."""
    root_id: str | None = None
    """The first task of the workflow."""
    parent_id: str | None = None
    """The task that sent this one."""
    group: None = None
    """Never sent: labrxiv sends no groups."""
    group_index: None = None
    """Never sent: labrxiv sends no groups."""
    shadow: None = None
    """Never sent: a name to log instead of `task`."""
    eta: str | None = None
    """When to run it (ISO 8601): a retry's countdown."""
    expires: None = None
    """Never sent: Celery would discard an expired message without a dead letter."""
    retries: int = Field(default=0, ge=0)
    """How many times it was retried."""
    timelimit: list[None] | None = Field(default=None, min_length=2, max_length=2)
    """Never set: Celery would kill a task that outlives it, without a dead letter."""
    argsrepr: str | None = None
    """The arguments as logged."""
    kwargsrepr: str | None = None
    """The keyword arguments as logged."""
    origin: str | None = None
    """The producer's host and process."""
    ignore_result: bool | None = None
    """Whether to store no result (None: the task's own setting)."""
    replaced_task_nesting: int = Field(default=0, ge=0)
    """How often the task was replaced (never, in labrxiv)."""
    stamped_headers: list[str] | None = None
    """Headers stamped by a workflow (none in labrxiv)."""
    stamps: dict[str, Any] | None = None
    """The stamps' values."""
    redelivered: bool | None = None
    """Set by kombu when it puts an unacknowledged message back."""

    @field_validator("eta")
    @classmethod
    def _iso(cls, value: str | None) -> str | None:
        if value is not None:
            datetime.fromisoformat(value).timestamp()  # as Celery converts it
        return value


def task_message_problem(message: Message) -> str | None:
    """Why `message` is not a Celery task message a worker can take, or None."""
    headers = message.headers
    if message.content_type == UNREADABLE:
        reason = headers.get(REASON_HEADER) if isinstance(headers, dict) else None
        return str(reason or "an item the Redis channel could not read")
    if not isinstance(headers, dict):
        return "not a task message: its headers are not an object"
    if "task" not in headers:
        return "not a task message: no 'task' header (labrxiv sends Celery protocol 2)"
    try:
        TaskHeaders.model_validate(headers)
    except ValidationError as exc:
        return "bad task header: " + "; ".join(
            f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors()
        )
    if message.content_type != "application/json":
        return f"the body's content type is {message.content_type!r}, not application/json"
    try:
        body = message.decode()
    except Exception as exc:  # kombu raises DecodeError, or whatever the decoder did
        return f"the body cannot be decoded: {exc}"
    return _body_problem(body)


def _body_problem(body: Any) -> str | None:
    if not (isinstance(body, list) and len(body) == 3):
        return "the body is not [args, kwargs, embed]"
    args, kwargs, embed = body
    if not isinstance(args, list):
        return "the body's args are not a list"
    if not isinstance(kwargs, dict):
        return "the body's kwargs are not an object"
    if embed is not None and not (
        isinstance(embed, dict)
        and set(embed) <= _EMBED_KEYS
        and all(value is None for value in embed.values())
    ):
        return "the body's embed is not empty (labrxiv sends no callbacks, chains or chords)"
    return None


class DeadLetteringConsumer(Consumer):
    """Celery's consumer, dead-lettering every message it cannot run instead of dropping
    it or stopping on it."""

    def create_task_handler(self, *args: Any, **kwargs: Any) -> Any:
        received = super().create_task_handler(*args, **kwargs)

        def on_task_received(message: Message) -> Any:
            problem = task_message_problem(message)
            if problem is not None:
                return self.dead_letter(message, problem)
            try:
                return received(message)
            except Exception as exc:
                # kombu counts a KeyError as a broker fault (kombu #2582); from here it
                # is the message's, and reconnecting would only bring it back.
                if isinstance(exc, self.connection_errors) and not isinstance(exc, KeyError):
                    raise
                log.exception("the worker could not take a message")
                return self.dead_letter(message, f"the worker could not take it: {exc!r}")

        return on_task_received

    def on_decode_error(self, message: Message, exc: Exception) -> None:
        problem = task_message_problem(message)
        self.dead_letter(message, problem or f"the body cannot be decoded: {exc}")

    def on_unknown_message(self, body: Any, message: Message) -> None:
        self.dead_letter(message, "not a task message: no 'task' header")

    def on_unknown_task(self, body: Any, message: Message, exc: Exception) -> None:
        name = message.headers.get("task") if isinstance(message.headers, dict) else None
        self.dead_letter(message, f"unknown task {name!r}: no worker task has this name")

    def on_invalid_task(self, body: Any, message: Message, exc: Exception) -> None:
        self.dead_letter(message, f"invalid task message: {exc}")

    def dead_letter(self, message: Message, reason: str) -> None:
        """Send `message` to the recorder's dead letters with `reason`, then ack it."""
        info = message.delivery_info if isinstance(message.delivery_info, dict) else {}
        queue = str(info.get("routing_key") or "?")
        raw, size = cut(_body_bytes(message.body))
        headers = message.headers if isinstance(message.headers, dict) else {}
        if message.content_type != UNREADABLE:
            reason = f"{reason} (task {headers.get('task')!r}, id {headers.get('id')!r}, {size})"
        if headers.get("task") == DEAD_LETTER_TASK:
            # Only this consumer sends them: one it refuses is a bug here, and sending a
            # dead letter about it would be refused again, and again, for ever.
            log.error("dropped a dead letter this worker cannot read: %s: %r", reason, raw[:2000])
            if not message.acknowledged:
                message.ack_log_error(log, self.connection_errors)
            return
        log.warning("dead letter on %s: %s", queue, reason)
        try:
            self.app.send_task(
                DEAD_LETTER_TASK, args=[queue, reason, for_transit(raw)], queue="events"
            )
        except Exception as exc:
            # The broker is away (send_task retried already). A connection error makes
            # Celery reconnect, which puts this unacknowledged message back on its
            # queue: it is dead-lettered later, not lost, and the worker goes on.
            log.error("could not send the dead letter: %r", exc)
            raise ConnectionError(f"could not send a dead letter: {exc!r}") from exc
        if not message.acknowledged:
            message.ack_log_error(log, self.connection_errors)


def _body_bytes(body: Any) -> bytes:
    if isinstance(body, bytes):
        return body
    if isinstance(body, str):
        return body.encode("utf-8", "backslashreplace")
    return repr(body).encode("utf-8", "backslashreplace")
