"""Sending a run's events as they happen, for a step that runs long (an agent's session).

A lab step usually returns its events and the step numbers and sends them at its end. A
session (an agent process that runs for the whole run) must put its events in the log as
they happen: a model call written ahead before it is sent, a score before the agent reads
it. The emitter numbers each batch after the last one it sent, with ids derived from the
run and the version, folds it into the run's state (what the session checks budgets
and counts attempts on) and, where the step holds a lease, moves the lease to the new
last version before it sends, so no other take of the run's steps starts meanwhile
(`workers.lab.lease.SESSION`).

A batch is sent once the one before it is in the log (`settle`): the bus's threads (the
embedded bus runs several) record two batches sent close together in either order, and
the recorder refuses a batch that comes before its predecessor as a version conflict
(seen as an agent lab whose session lost its events and was taken over, under load).
"""

import threading
import time
from collections.abc import Callable, Sequence

from events import Event
from events.ids import utcnow
from events.payloads import Payload
from events.streams import event_id_at
from runstate import RunState
from runstate.fold import apply
from workers.bus.base import Bus, publish
from workers.lab.lease import Take

SETTLE_SECONDS = 10.0
"""How long a batch waits at most for the one before it to be recorded."""


def actor_of(payload: Payload, state: RunState) -> str:
    """Who an event of the run is by: scores are the grader's word, not the lab's."""
    return f"grader:{state.task}" if payload.type == "experiment.scored" else state.lab


class Emitter:
    """Sends a run's events in order, one batch at a time, from any thread."""

    def __init__(
        self,
        bus: Bus,
        state: RunState,
        take: Take | None = None,
        recorded: Callable[[str], int] | None = None,
    ) -> None:
        self._bus = bus
        self._take = take
        self._recorded = recorded
        """A stream's last version in the log (`EventStore.stream_version`); None: the
        batches are sent without waiting."""
        self._lock = threading.Lock()
        self.state = state
        """The run with every event sent so far folded in."""
        self.sent = 0
        """Events sent."""

    def emit(self, payloads: Sequence[Payload], blobs: dict[str, bytes] | None = None) -> RunState:
        """Send `payloads` (and the blobs they reference) as the run's next events; the
        run's state after them."""
        if not payloads:
            return self.state
        with self._lock:
            self._settle()
            state = self.state
            now = utcnow()
            events = []
            for payload in payloads:
                version = state.version + 1
                event = Event(
                    id=event_id_at(state.stream, version, state.last_at),
                    stream=state.stream,
                    version=version,
                    occurred_at=now,
                    causation_id=state.last_id,
                    correlation_id=state.campaign,
                    actor=actor_of(payload, state),
                    payload=payload,
                )
                events.append(event)
                state = apply(state, event)
            if self._take is not None:
                self._take.moved_to(state.version)
            publish(self._bus, events, blobs or {})
            self.state = state
            self.sent += len(events)
            return state

    def settle(self) -> None:
        """Wait until the log holds every event sent (at most `SETTLE_SECONDS`: past
        them, the recorder's own retry is left to sort it out)."""
        with self._lock:
            self._settle()

    def _settle(self) -> None:
        if self._recorded is None or not self.sent:
            return
        deadline = time.monotonic() + SETTLE_SECONDS
        pause = 0.001
        while self._recorded(self.state.stream) < self.state.version:
            if time.monotonic() > deadline:
                return
            time.sleep(pause)
            pause = min(pause * 2, 0.05)
