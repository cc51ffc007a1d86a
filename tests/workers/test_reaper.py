"""The reaper finds runs whose next step was lost and the resent step moves them on."""

from datetime import timedelta
from pathlib import Path

from events import Event
from events.ids import new_id, utcnow
from events.payloads import Budget, RunStarted
from labrxiv.settings import load_settings
from labrxiv.wiring import open_embedded
from workers.lab.reaper import reap, stalled_runs, unfinished_runs


def test_a_run_whose_step_was_lost_is_found_and_resumed(tmp_path: Path) -> None:
    system = open_embedded(load_settings(data_dir=tmp_path / "data"), threads=2)
    try:
        started = Event(
            id=new_id(),
            stream="run-lost",
            version=0,
            occurred_at=utcnow(),
            actor="lab-0",
            payload=RunStarted(
                task="continual-digits",
                lab="lab-0",
                policy="search",
                budget=Budget(attempts=1),
                papers=1,
            ),
        )
        system.store.append([started])  # straight into the log: no reaction, no step sent
        assert unfinished_runs(system.store) == ["run-lost"]
        assert stalled_runs(system.store, ["run-lost"], timedelta(hours=1)) == []
        assert stalled_runs(system.store, ["run-lost"], timedelta(0)) == [("run-lost", 0)]

        assert reap(system.bus, system.store, ["run-lost"], timedelta(0)) == 1
        system.bus.join()
        events = system.store.read_stream("run-lost")
        assert events[-1].type == "run.finished"
        assert [e.version for e in events] == list(range(len(events)))
        assert unfinished_runs(system.store) == []
        assert reap(system.bus, system.store, ["run-lost"], timedelta(0)) == 0
    finally:
        system.close()
