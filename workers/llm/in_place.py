"""Model calls taken to their end in one process, for callers that are no lab step: a
reviewer's evaluation on papers from outside the archive (`workers.review.eval_run`)
and the LLM inspector (`workers.inspect.run`).

Each writes its events into a stream of its own, one batch at a time, and waits until
the log holds them before going on (`Record`): so a call is in the log before it is sent,
as for a lab. The call goes through the write-ahead driver (`workers.llm.driver`): an
interrupted attempt is followed by the next, a failure waited out in place.
"""

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from events import Event, EventStore
from events.bounded_cache import BoundedCache
from events.ids import utcnow
from events.payloads import ModelCalled, ModelFailed, ModelResponded, Payload
from events.streams import event_id_at
from workers.llm import driver
from workers.llm.gateway import Gateway
from workers.llm.request import ModelRequest

Record = Callable[[list[Event], dict[str, bytes]], None]
"""Publish events (and blobs) and return once the log holds them."""


@dataclass
class StreamWriter:
    """Appends payloads to one stream, version after version, through `record`."""

    stream: str
    actor: str
    record: Record
    correlation_id: str | None = None
    version: int = -1
    started: datetime | None = None

    def write(self, payloads: list[Payload], blobs: dict[str, bytes]) -> None:
        """Record `payloads` as the stream's next events (nothing when there are none)."""
        if not payloads:
            return
        self.started = self.started or utcnow()
        events = []
        for payload in payloads:
            self.version += 1
            events.append(
                Event(
                    id=event_id_at(self.stream, self.version, self.started),
                    stream=self.stream,
                    version=self.version,
                    occurred_at=utcnow(),
                    correlation_id=self.correlation_id,
                    actor=self.actor,
                    payload=payload,
                )
            )
        self.record(events, blobs)


def call(
    model: Gateway, store: EventStore, inflight: Path, request: ModelRequest, out: StreamWriter
) -> tuple[ModelResponded, dict[str, bytes]] | str:
    """Write `request` ahead into `out`, send it and follow its attempts: the answer and
    the blobs recorded with it, or why there is none (the gateway gave up)."""
    calls: driver.PreparedCalls = BoundedCache(1)  # the one call, from its writing to its send
    prepared = driver.write_ahead(model, request, calls)
    called = prepared.called
    out.write([called], prepared.blobs)
    while True:
        sent, blobs = driver.send(model, store, inflight, called, out.stream, calls)
        outcome = sent[-1]
        out.write(sent, blobs)
        if isinstance(outcome, ModelCalled):  # an interrupted call: its next attempt
            called = outcome
            continue
        if isinstance(outcome, ModelFailed):
            if not outcome.will_retry:
                return f"the model failed: {outcome.error} {outcome.detail}"[:2000]
            again, _ = driver.after_failure(model, called, outcome, utcnow(), final=True)
            called = again[0]  # type: ignore[assignment]
            out.write([called], {})
            continue
        assert isinstance(outcome, ModelResponded)
        return outcome, blobs
