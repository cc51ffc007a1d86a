"""The bus interface every implementation keeps."""

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from events import Event
from events.wire import encode_batch

RECORD_TASK = "labrxiv.record"
"""The recorder's task name; its queue is `events`."""


class BusStopped(RuntimeError):
    """The bus was stopped (the embedded one at Ctrl-C): nothing sent now is delivered. A
    task raising it ends there; what it would have sent is taken again from the log."""


class Bus(Protocol):
    """Delivers task messages at least once; handlers make redelivery harmless."""

    def send(self, task: str, *args: Any) -> None:
        """Queue `task(*args)` for a worker (JSON-able arguments only); `BusStopped` if
        the bus was stopped and it is not sent."""

    def close(self) -> None:
        """Release connections and threads."""

    @property
    def stopped(self) -> bool:
        """Whether `send` now raises `BusStopped` (only the embedded bus can be stopped:
        `LocalBus.abandon`, at Ctrl-C); a lab step takes nothing then."""


def publish(bus: Bus, events: Sequence[Event], blobs: Mapping[str, bytes] | None = None) -> None:
    """Publish a batch of events (and their blobs) for the recorder to append."""
    if events or blobs:
        bus.send(RECORD_TASK, encode_batch(events, blobs))
