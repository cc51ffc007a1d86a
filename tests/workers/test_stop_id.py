"""A stop (`run.interrupted`) takes the run's next version, with an id of its own: a
step's events for that version that reach the log after it (a step of another process
on the same log, which a Ctrl-C stops with every unfinished run:
`labrxiv.interrupt.stop_embedded`) are refused as a version conflict, which the
recorder keeps as a dead letter, never taken for recorded because a stored event has
their id."""

from datetime import UTC, datetime, timedelta

import pytest

from events import ConflictError, Event, EventStore
from events.ids import new_id
from events.payloads import RunStarted, ToolInvoked
from events.streams import event_id_at
from workers.lab import interrupt

T0 = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)
RUN = "run-c1-0"


def test_a_steps_event_after_a_stop_is_a_conflict_not_already_recorded(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = EventStore.from_url(sqlite_url)
    started = RunStarted(task="t", lab="lab-0", policy="search")
    first = Event(
        id=new_id(), stream=RUN, version=0, occurred_at=T0, correlation_id="c1", payload=started
    )
    store.append([first])
    # What the step after v0 publishes (`workers.lab.step._send`): ids from run, version
    # and the time of the event it follows.
    step = Event(
        id=event_id_at(RUN, 1, T0),
        stream=RUN,
        version=1,
        occurred_at=T0 + timedelta(seconds=5),
        causation_id=first.id,
        correlation_id="c1",
        payload=ToolInvoked(call_id="c", tool="bash", args={"command": "true"}),
    )
    monkeypatch.setattr(interrupt, "utcnow", lambda: T0 + timedelta(seconds=2))
    assert interrupt.record_interrupted(store, "c1", [RUN], "Ctrl-C in labrxiv campaign")

    with pytest.raises(ConflictError):
        store.append([step])
