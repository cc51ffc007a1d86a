"""The emitter sends a long step's batches in order and notices when the versions it
waited for hold another take's events: it stops rather than send after them."""

import uuid

import pytest

from events import Event
from events.ids import utcnow
from events.payloads import Payload, PhaseEntered, RunFinished, RunStarted
from runstate import RunState, fold
from tests.sent_bus import Sent
from workers.lab.emitter import Emitter, Superseded

STREAM = "run-emitter-test"


def _state() -> RunState:
    started = Event(
        id=uuid.uuid4(),
        stream=STREAM,
        version=0,
        occurred_at=utcnow(),
        actor="lab-0",
        payload=RunStarted(task="continual-digits", lab="lab-0", policy="agent"),
    )
    return fold([started])


def _at(version: int, payload: Payload | None = None) -> tuple[int, str]:
    """The stream's head as the log reads it: its last version and that event's type."""
    return version, (payload or PhaseEntered(phase="plan")).type


def test_a_batch_the_log_holds_is_sent_and_folded() -> None:
    bus = Sent()
    emitter = Emitter(bus, _state(), None, lambda stream: _at(99), lambda event_id: True)
    state = emitter.emit([PhaseEntered(phase="plan"), PhaseEntered(phase="experiment")])
    assert state.version == 2 and emitter.sent == 2
    assert [e["version"] for e in bus.published()] == [1, 2]


def test_versions_held_by_another_takes_events_stop_the_emitter() -> None:
    emitter = Emitter(Sent(), _state(), None, lambda stream: _at(99), lambda event_id: False)
    with pytest.raises(Superseded, match="another take of the run"):
        emitter.emit([PhaseEntered(phase="plan")])


def test_a_run_that_ended_before_the_batch_stops_the_emitter() -> None:
    """The log refuses a batch after the run's end (another take ended it): the emitter
    stops at once rather than wait for versions that never come."""
    ended = _at(1, RunFinished(reason="error", detail="taken over"))
    emitter = Emitter(Sent(), _state(), None, lambda stream: ended, lambda event_id: False)
    with pytest.raises(Superseded, match="up to version 1"):
        emitter.emit([PhaseEntered(phase="plan"), PhaseEntered(phase="experiment")])
