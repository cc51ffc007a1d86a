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

import logging
import threading
import time
from collections.abc import Callable, Sequence
from uuid import UUID

from events import Event
from events.ids import utcnow
from events.payloads import Payload, RunResumed
from events.storable import storable_value
from events.streams import ENDS, event_id_at
from runstate import RunState
from runstate.fold import apply
from workers.bus.base import Bus, BusStopped, publish
from workers.lab.lease import LeaseLost, Take

log = logging.getLogger(__name__)

SAY_EVERY = 30.0
"""Seconds between the lines that say a batch is still not in the log (a recorder away)."""


class Superseded(LeaseLost):
    """The log's events at this emitter's versions are another take's: it stops."""

    def __init__(self, stream: str, version: int) -> None:
        super().__init__(stream, version)
        self.args = (
            f"{stream}: another take of the run recorded its events up to version {version}: "
            "this one sends nothing more",
        )


def resumed(state: RunState, payloads: Sequence[Payload]) -> list[Payload]:
    """`payloads`, the events a step sends next, led by `run.resumed` when the run stands
    stopped (`run.interrupted`): the stop ends where the step takes the run up, which a
    reader that selects the run's events by type sees too. A step that sends nothing
    leaves the run stopped (a run awaiting its reviews records nothing until the decision)."""
    if state.stopped_at is None or not payloads:
        return list(payloads)
    return [RunResumed(), *payloads]


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
        recorded: Callable[[str], tuple[int, str] | None] | None = None,
        holds: Callable[[UUID], bool] | None = None,
    ) -> None:
        self._bus = bus
        self._take = take
        self._recorded = recorded
        self._holds = holds
        """Whether the log holds an event (by id): a version reached by another take's
        events is not this emitter's batch recorded."""
        self._lock = threading.Lock()
        self.state = state
        """The run with every event sent so far folded in."""
        self.sent = 0
        """Events sent."""

    @property
    def leased(self) -> bool:
        """Whether the step holds a lease on the run (no other take starts meanwhile)."""
        return self._take is not None

    def on_lost(self, said: Callable[[], None]) -> None:
        """Call `said` once another take is found to have the run (the lease's renewals
        failed): the sender stops at once, not at its next batch."""
        if self._take is not None:
            self._take.on_lost(said)

    def emit(self, payloads: Sequence[Payload], blobs: dict[str, bytes] | None = None) -> RunState:
        """Send `payloads` (and the blobs they reference) as the run's next events; the
        run's state after them."""
        if not payloads:
            return self.state
        with self._lock:
            state = self.state
            now = utcnow()
            events = []
            for payload in map(_storable, resumed(state, payloads)):
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
            self._wait_recorded(state.stream, state.version, events[-1].id)
            return state

    def _wait_recorded(self, stream: str, version: int, last: UUID) -> None:
        """Wait until the log holds `stream` up to `version` (no reader: return at once);
        `Superseded` when the events there are not this batch's (`last`: its last event's
        id), or the run ended before them: another take of the run sent them, and this
        one may send nothing more."""
        if self._recorded is None:
            return
        pause, began, said = 0.002, time.monotonic(), time.monotonic()
        while (head := self._recorded(stream)) is None or head[0] < version:
            if head is not None and head[1] in ENDS:  # the log refuses this batch
                raise Superseded(stream, head[0])
            if self._bus.stopped:
                raise BusStopped(f"{stream}: the bus stopped before version {version} was recorded")
            if time.monotonic() - said > SAY_EVERY:
                waited = time.monotonic() - began
                log.warning("%s: version %d not in the log after %.0fs", stream, version, waited)
                said = time.monotonic()
            time.sleep(pause)
            pause = min(pause * 2, 0.05)
        if self._holds is not None and not self._holds(last):
            raise Superseded(stream, version)


def _storable(payload: Payload) -> Payload:
    """`payload` as the log can hold it (`events.storable`): a session's text comes from
    an agent (its stderr, a command's output it reported, its arguments)."""
    data = payload.model_dump(mode="json")
    clean = storable_value(data)
    return payload if clean == data else type(payload).model_validate(clean)
