# ruff: noqa: F811 - the fixture `system` is imported from test_llm_curves
"""Replay of an `llm` run: at every step, the state rebuilt from the log (the phase, the
conversation's exchanges, the calls and their outcomes, the spend) equals the state the
live run's step was given, and each step's tokens and cost add up to the run's."""

import pytest
from test_llm_curves import system  # noqa: F401 - a fixture

from events.payloads import LlmConfig
from labrxiv.wiring import Embedded
from runstate import RunState, fold
from runstate.trajectory import steps
from workers.lab.campaign import CampaignPlan, start_campaign
from workers.stream_cache import StreamCache


@pytest.mark.slow
def test_replay_of_an_llm_run_equals_what_its_steps_saw(
    system: Embedded, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: dict[int, RunState] = {}
    original = StreamCache.run_state

    def recording(self: StreamCache, stream: str) -> RunState | None:
        state = original(self, stream)
        if state is not None:
            seen[state.version] = state
        return state

    monkeypatch.setattr(StreamCache, "run_state", recording)
    plan = CampaignPlan(
        task="math-prompting",
        labs=1,
        papers=1,
        mode="isolated",
        seed=1,
        attempts=4,
        policy="llm",
        llm=LlmConfig(model="lab-priced", temperature=0.0),
    )
    _, (run,) = start_campaign(system.bus, plan)
    system.settle()
    events = system.store.read_stream(run)
    assert events[-1].type == "run.finished"
    taken = list(steps(events))
    compared = [k for k, (step, _) in enumerate(taken) if step.last_version in seen]
    assert len(compared) == len(taken) - 1
    for k in compared:
        step, state = taken[k]
        assert state == seen[step.last_version], f"step {step.number}"
    assert any(s.phase is not None for s, _ in taken), "the phases are replayed"
    assert sum(s.model_calls for s, _ in taken) == sum(e.type == "model.called" for e in events)
    total = fold(events).spend
    assert sum(s.spend.tokens for s, _ in taken) == total.tokens > 0
    assert sum(s.spend.dollars for s, _ in taken) == pytest.approx(total.dollars, rel=1e-12)
    assert taken[-1][0].total == total
