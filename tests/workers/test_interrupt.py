"""Interrupting a campaign's runs is recorded once per stop: the event's id is derived
from the runs and how far each had gone, so recording the same stop again is a no-op,
and a stop after the runs moved on is a new interruption."""

from pathlib import Path

from events import Event, EventStore
from events.ids import new_id, utcnow
from events.payloads import ToolInvoked
from tests.run_events import run_started
from workers.bus.memory import MemoryBus
from workers.lab.interrupt import record_interrupted, unfinished_by_campaign
from workers.reactions import REACTIONS
from workers.reactor import Reactor

CAMPAIGN = "c0ffee"


def _interruptions(store: EventStore) -> int:
    return len(store.read_records(types=["campaign.interrupted"]))


def _stops(store: EventStore, run: str) -> int:
    return sum(event.type == "run.interrupted" for event in store.read_stream(run))


def test_interrupting_twice_writes_one_event(tmp_path: Path) -> None:
    store = EventStore.from_url(f"sqlite:///{tmp_path / 'log.db'}")
    runs = [f"run-{CAMPAIGN}-0", f"run-{CAMPAIGN}-1"]
    store.append([run_started(run, CAMPAIGN) for run in runs])
    assert unfinished_by_campaign(store) == {CAMPAIGN: runs}

    assert record_interrupted(store, CAMPAIGN, runs, "Ctrl-C in labrxiv campaign")
    assert not record_interrupted(store, CAMPAIGN, runs, "Ctrl-C in labrxiv campaign")
    assert _interruptions(store) == 1

    moved = Event(
        id=new_id(),
        stream=runs[0],
        version=store.stream_version(runs[0]) + 1,
        occurred_at=utcnow(),
        correlation_id=CAMPAIGN,
        actor="lab-0",
        payload=ToolInvoked(tool="bash", call_id="1", args={"command": "true"}),
    )
    store.append([moved])
    assert record_interrupted(store, CAMPAIGN, runs, "--timeout 1s in labrxiv resume")
    assert _interruptions(store) == 2
    assert [_stops(store, run) for run in runs] == [2, 1], "a run stopped stays stopped"
    assert not record_interrupted(store, CAMPAIGN, runs, "--timeout 1s in labrxiv resume")


def test_each_run_stopped_records_its_stop_in_its_own_stream(tmp_path: Path) -> None:
    store = EventStore.from_url(f"sqlite:///{tmp_path / 'log.db'}")
    runs = [f"run-{CAMPAIGN}-0", f"run-{CAMPAIGN}-1"]
    store.append([run_started(run, CAMPAIGN) for run in runs])
    assert record_interrupted(store, CAMPAIGN, runs, "Ctrl-C in labrxiv campaign")
    for run in runs:
        last = store.last_record(run)
        assert last is not None and last.type == "run.interrupted" and last.version == 1
        assert last.payload["detail"] == "Ctrl-C in labrxiv campaign"


def test_a_stopped_run_waits_for_its_resume(tmp_path: Path) -> None:
    """A reactor catching up over a stop sends no step of the runs it stopped: they go on
    when resumed (`labrxiv resume`), not when some process next reads the log."""
    store = EventStore.from_url(f"sqlite:///{tmp_path / 'log.db'}")
    runs = [f"run-{CAMPAIGN}-0", f"run-{CAMPAIGN}-1"]
    store.append([run_started(run, CAMPAIGN) for run in runs])
    reactor = Reactor(store, MemoryBus(), REACTIONS)
    reactor.catch_up()
    bus = MemoryBus()
    reactor.bus = bus
    assert record_interrupted(store, CAMPAIGN, runs, "Ctrl-C in labrxiv campaign")
    reactor.catch_up()
    assert bus.sent == []
