"""Replay: a run's trajectory cut into its lab steps, and its state at any step, rebuilt
from the log alone, equal the state the live run had when it took the next step."""

from collections.abc import Iterator
from pathlib import Path

import pytest

from labrxiv.settings import load_settings
from labrxiv.wiring import Embedded, open_embedded
from runstate import RunState, fold
from runstate.trajectory import state_at, steps
from workers.lab.campaign import CampaignPlan, start_campaign
from workers.stream_cache import StreamCache


class Seen(dict[tuple[str, int], RunState]):
    """Every state a lab step was given, by (run, version)."""


@pytest.fixture
def seen(monkeypatch: pytest.MonkeyPatch) -> Seen:
    states = Seen()
    original = StreamCache.run_state

    def recording(self: StreamCache, stream: str) -> RunState | None:
        state = original(self, stream)
        if state is not None:
            states[(stream, state.version)] = state
        return state

    monkeypatch.setattr(StreamCache, "run_state", recording)
    return states


@pytest.fixture
def system(tmp_path: Path) -> Iterator[Embedded]:
    embedded = open_embedded(load_settings(data_dir=tmp_path / "data"), threads=2)
    yield embedded
    embedded.close()


def test_replay_at_each_step_equals_what_the_live_run_saw(system: Embedded, seen: Seen) -> None:
    plan = CampaignPlan(
        task="continual-digits", labs=2, papers=1, mode="archive", seed=3, attempts=3
    )
    _, runs = start_campaign(system.bus, plan)
    system.settle()
    for run in runs:
        events = system.store.read_stream(run)
        taken = list(steps(events))
        assert taken[-1][1] == fold(events), "the last step's state is the whole run's"
        compared = 0
        for step, state in taken:
            live = seen.get((run, step.last_version))
            if live is not None:
                assert state == live, f"step {step.number}"
                compared += 1
        assert compared == len(taken) - 1, "every step but the last was followed by a step"
        numbers = [s.number for s, _ in taken]
        assert numbers == list(range(len(taken)))
        versions = [v for s, _ in taken for v in range(s.first_version, s.last_version + 1)]
        assert versions == [e.version for e in events], "steps cover the run, in order"


def test_state_at_a_step_or_a_position(system: Embedded) -> None:
    plan = CampaignPlan(
        task="continual-digits", labs=1, papers=1, mode="isolated", seed=1, attempts=2
    )
    _, (run,) = start_campaign(system.bus, plan)
    system.settle()
    events = system.store.read_stream(run)
    every = list(steps(events))
    for k in (0, 2, len(every) - 1):
        taken, state = state_at(events, step=k)
        assert [s.number for s in taken] == list(range(k + 1))
        assert state == every[k][1]
    middle = every[2][0]
    assert middle.last_position is not None
    taken, state = state_at(events, position=middle.last_position)
    assert state == every[2][1]
    evaluated = [s for s, _ in every if any(a.tool == "evaluate" for a in s.actions)]
    assert len(evaluated) == 2 and all(s.scored for s in evaluated)
    assert evaluated[-1].best == max(a.normalized for a in fold(events).attempts)
    with pytest.raises(ValueError, match="no event"):
        state_at(events, position=0)
