"""The reaper finds runs whose next step was lost and the resent step moves them on."""

from datetime import timedelta
from pathlib import Path

from labrxiv.settings import load_settings
from labrxiv.wiring import open_embedded
from tests.run_events import run_started
from workers.bus.memory import MemoryBus
from workers.lab.reaper import Reaper, stalled_runs, unfinished_runs


def test_a_run_whose_step_was_lost_is_found_and_resumed(tmp_path: Path) -> None:
    system = open_embedded(load_settings(data_dir=tmp_path / "data"), threads=2)
    try:
        system.store.append([run_started("run-lost")])  # no reaction, no step sent
        assert unfinished_runs(system.store) == ["run-lost"]
        assert stalled_runs(system.store, ["run-lost"], timedelta(hours=1)) == []
        assert stalled_runs(system.store, ["run-lost"], timedelta(0)) == [("run-lost", 0)]

        assert Reaper(system.bus, system.store, timedelta(0)).reap(["run-lost"]) == 1
        system.bus.join()
        events = system.store.read_stream("run-lost")
        assert events[-1].type == "run.finished"
        assert [e.version for e in events] == list(range(len(events)))
        assert unfinished_runs(system.store) == []
        assert Reaper(system.bus, system.store, timedelta(0)).reap(["run-lost"]) == 0
    finally:
        system.close()


def test_a_step_sent_again_and_still_not_taken_is_not_sent_at_every_tick(tmp_path: Path) -> None:
    """A step queued behind a backlog looks like a lost one; the reaper sends it again
    once, then after waits that double, not at every tick (each copy lengthens the
    queue it waits in)."""
    system = open_embedded(load_settings(data_dir=tmp_path / "data"), threads=1)
    try:
        system.store.append([run_started("run-queued")])
        at = system.store.read_stream("run-queued")[0].recorded_at
        bus = MemoryBus()
        reaper = Reaper(bus, system.store, timedelta(seconds=30))
        ticks = [10 * k for k in range(1, 71)]  # every third of the bound, for 11 minutes
        resent = [t for t in ticks if reaper.reap(["run-queued"], at + timedelta(seconds=t))]
        assert resent == [30, 90, 210, 450, 690]  # then waits of 60, 120, 240, 240 (8 × 30)
        assert {args for _, args in bus.sent} == {("run-queued", 0)}
    finally:
        system.close()
