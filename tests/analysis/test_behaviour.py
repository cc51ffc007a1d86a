"""Behaviour figures of a run: on a small log whose figures can be checked by hand, and on
real offline runs, where they must agree with the fold the lab steps use (runstate) and
with the one counting rule (events.spend)."""

from collections.abc import Iterator
from dataclasses import asdict
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from analysis.behaviour import as_record, behaviour
from analysis.streaming import behaviours
from events import Event, EventStore
from events.ids import new_id
from events.payloads import (
    ExperimentScored,
    LlmConfig,
    ModelCalled,
    ModelResponded,
    Payload,
    PhaseEntered,
    Price,
    RunFinished,
    RunStarted,
    ToolInvoked,
    ToolReturned,
    Usage,
)
from events.spend import NOTHING, spend_of_payload
from labrxiv.settings import load_settings
from labrxiv.wiring import open_embedded
from runstate import fold
from runstate.trajectory import steps
from workers.lab.campaign import CampaignPlan, start_campaign

T0 = datetime(2026, 3, 1, tzinfo=UTC)
Logged = tuple[EventStore, str, list[str]]
"""A campaign's log, its id and its runs."""
PRICE = Price(input_per_mtok=1.0, cached_input_per_mtok=0.5, output_per_mtok=2.0, source="t")


def _call(call_id: str, phase: str) -> ModelCalled:
    return ModelCalled(
        call_id=call_id, request_id=call_id, attempt=1, model="m", provider="p",
        phase=phase, messages=1,
    )  # fmt: skip


def _answer(call_id: str, model: str, usage: Usage, latency: float, cost: float | None) -> Payload:
    return ModelResponded(
        call_id=call_id, model=model, usage=usage, latency_s=latency,
        price=PRICE if cost is not None else None, cost_usd=cost, cost_known=cost is not None,
    )  # fmt: skip


def _tool(call_id: str, tool: str, seconds: float) -> ToolReturned:
    return ToolReturned(call_id=call_id, tool=tool, exit_code=0, duration_s=seconds)


def _scored(attempt: int, normalized: float) -> ExperimentScored:
    return ExperimentScored(
        attempt=attempt, subtask_scores={"a": normalized}, score=normalized,
        normalized_score=normalized,
    )  # fmt: skip


# (seconds after the start, step, payload): every event of a step shares a causation id.
HAND: list[tuple[float, int, Payload]] = [
    (0, 0, RunStarted(task="t", lab="lab-0", policy="llm", llm=LlmConfig(model="m"))),
    (5, 1, PhaseEntered(phase="plan")),
    (10, 1, _call("c1", "plan")),
    (20, 2, _answer("c1", "m-a", Usage(input_tokens=1000, cached_input_tokens=200,
                                         output_tokens=300, reasoning_tokens=100), 2.0, 0.01)),
    (30, 2, ToolInvoked(call_id="t1", tool="bash")),
    (35, 2, _tool("t1", "bash", 5.0)),
    (38, 3, PhaseEntered(phase="experiment")),
    (40, 3, _call("c2", "experiment")),
    (50, 4, _answer("c2", "m-b", Usage(input_tokens=500, output_tokens=50,
                                        reasoning_tokens=20), 3.0, None)),
    (60, 4, ToolInvoked(call_id="t2", tool="evaluate")),
    (80, 4, _tool("t2", "evaluate", 20.0)),
    (81, 4, _scored(1, 0.5)),
    (100, 5, ToolInvoked(call_id="t3", tool="evaluate")),
    (100.5, 5, _tool("t3", "evaluate", 0.5)),
    (101, 5, _scored(2, 0.7)),
    (105, 6, _scored(3, 0.6)),
    (110, 6, _call("c3", "experiment")),  # never answered: an unknown outcome
    (120, 7, RunFinished(reason="done")),
]  # fmt: skip


def _hand_events() -> list[Event]:
    causes = [new_id() for _ in range(8)]
    return [
        Event(
            id=new_id(),
            stream="run-hand-0",
            version=version,
            occurred_at=T0 + timedelta(seconds=seconds),
            causation_id=None if step == 0 else causes[step],
            correlation_id="hand",
            payload=payload,
        )
        for version, (seconds, step, payload) in enumerate(HAND)
    ]


def test_figures_of_a_small_log_by_hand() -> None:
    b = behaviour(_hand_events())
    assert (b.run, b.policy, b.campaign, b.finished) == ("run-hand-0", "llm", "hand", "done")
    assert (b.events, b.steps, b.duration_s) == (len(HAND), 8, 120.0)
    # Three tool calls, at 30, 60 and 100 s of a 120 s run.
    assert b.density.actions == 3 and b.density.per_hour == pytest.approx(3 / (120 / 3600))
    assert [x.actions for x in b.density.bins] == [0, 0, 1, 0, 0, 1, 0, 0, 1, 0]
    assert b.density.bins[2].per_hour == pytest.approx(1 / (12 / 3600))
    assert b.tool_mix.by_tool == {"evaluate": 2, "bash": 1}
    assert b.tool_mix.by_third == {
        "start": {"bash": 1},  # 30 s: the first third is [0, 40)
        "ramp": {"evaluate": 1},  # 60 s
        "steady": {"evaluate": 1},  # 100 s
    }
    assert b.tool_mix.by_phase == {"plan": {"bash": 1}, "experiment": {"evaluate": 2}}
    assert b.tool_mix.phases_note is None
    # Gaps of 30 and 40 s.
    assert (b.gaps.count, b.gaps.median_s, b.gaps.max_s) == (2, 35.0, 40.0)
    assert b.gaps.p90_s == pytest.approx(39.0)
    assert (b.tokens.total, b.tokens.reasoning, b.tokens.rest) == (1850, 120, 1730)
    assert (b.tokens.model_calls, b.tokens.answered, b.tokens.unknown_outcome) == (3, 2, 1)
    assert (b.time.tools_s, b.time.model_s, b.time.idle_s) == (25.5, 5.0, 89.5)
    assert b.time.by_tool_s == {"evaluate": 20.5, "bash": 5.0}
    assert b.money.dollars == pytest.approx(0.01) and b.money.unknown_cost == 1
    assert b.money.by_phase["plan"].dollars == pytest.approx(0.01)
    assert b.money.by_phase["experiment"].unknown_cost == 1
    assert set(b.money.by_model) == {"m-a", "m-b"}
    # The best (0.7) was set by attempt 2, at 101 s, in step 5; 19 s of 120 came after.
    u = b.useful
    assert (u.scored, u.best, u.best_attempt, u.best_at_s, u.best_step) == (3, 0.7, 2, 101.0, 5)
    assert u.after_s == pytest.approx(19.0) and u.after_share == pytest.approx(19 / 120)


def test_tokens_are_the_one_counting_rule_and_steps_are_replays() -> None:
    events = _hand_events()
    b = behaviour(events)
    spent = sum((s for e in events if (s := spend_of_payload(e.payload))), NOTHING)
    assert spent == fold(events).spend
    assert (b.tokens.total, b.tokens.reasoning) == (spent.tokens, spent.reasoning_tokens)
    assert b.tokens.input == spent.input_tokens
    assert b.tokens.cached_input == spent.cached_input_tokens
    assert b.money.dollars == spent.dollars and b.money.unknown_cost == spent.unknown_cost
    assert b.steps == len(list(steps(events)))


def test_typed_events_and_stored_records_give_the_same_figures() -> None:
    events = _hand_events()
    assert behaviour([as_record(e) for e in events]) == behaviour(events)
    assert asdict(behaviour(events))  # plain values all the way down


def test_a_run_cut_short_has_figures_so_far() -> None:
    events = _hand_events()[:8]  # up to c2 written ahead
    b = behaviour(events)
    assert b.finished is None and b.duration_s == 40.0
    assert b.useful.best is None and b.useful.after_share is None
    assert b.tokens.unknown_outcome == 1  # c2 has no outcome yet


def test_a_stream_must_begin_with_its_start() -> None:
    with pytest.raises(ValueError):
        behaviour(_hand_events()[1:])
    with pytest.raises(ValueError):
        behaviour([])


def _copy(events: list[Event], stream: str, shift: float) -> list[Event]:
    return [
        e.model_copy(
            update={"stream": stream, "occurred_at": e.occurred_at + timedelta(seconds=shift)}
        )
        for e in events
    ]


def test_streaming_a_log_yields_each_run_when_it_finishes() -> None:
    a = _copy(_hand_events(), "run-hand-a", 0)
    b = _copy(_hand_events(), "run-hand-b", 7)
    mixed = sorted(a + b, key=lambda e: e.occurred_at)
    taken: list[str] = []

    def log() -> Iterator[object]:
        for event in mixed:
            taken.append(event.stream)
            yield as_record(event)

    got = behaviours(log())  # type: ignore[arg-type]
    first = next(got)
    assert first == behaviour(a)
    # Given at run-hand-a's finish, before run-hand-b's last events were read.
    assert taken.count("run-hand-b") < len(b)
    assert list(got) == [behaviour(b)]
    # A run whose start the read missed is skipped, not guessed.
    assert list(behaviours(as_record(e) for e in mixed if e.version > 0)) == []


# -- real offline runs -------------------------------------------------------------------


@pytest.fixture(scope="module")
def campaign_log(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Logged]:
    """A finished offline campaign of three labs sharing an archive."""
    data: Path = tmp_path_factory.mktemp("analysis") / "data"
    system = open_embedded(load_settings(data_dir=data), threads=2)
    try:
        plan = CampaignPlan(
            task="continual-digits", labs=3, papers=1, mode="archive", seed=5, attempts=3
        )
        campaign, runs = start_campaign(system.bus, plan)
        system.settle()
        yield system.store, campaign, runs
    finally:
        system.close()


def test_offline_runs_agree_with_the_fold(campaign_log: Logged) -> None:
    store, campaign, runs = campaign_log
    for run in runs:
        events = store.read_stream(run)
        b = behaviour(events)
        state = fold(events)
        assert b == behaviour(store.iter_records(stream=run))
        assert b.finished == state.finished.reason
        assert b.density.actions == state.steps
        assert sum(x.actions for x in b.density.bins) == state.steps
        assert sum(sum(t.values()) for t in b.tool_mix.by_third.values()) == state.steps
        assert b.tool_mix.by_phase == {} and b.tool_mix.phases_note  # offline: no phases
        assert b.papers == len(state.papers)
        assert b.duration_s == (state.last_at - state.started_at).total_seconds()
        assert (b.tokens.total, b.money.dollars) == (state.spend.tokens, state.spend.dollars)
        scores = [a.normalized for a in state.attempts if a.normalized is not None]
        assert b.useful.scored == len(scores) > 0 and b.useful.best == max(scores)
        # The best was set in the step `labrxiv replay` shows it set in.
        trajectory = [step for step, _ in steps(events)]
        assert b.steps == len(trajectory)
        setting = [s for s in trajectory if s.best == b.useful.best][0]
        assert b.useful.best_step == setting.number
        assert b.useful.best_at_s is not None and b.useful.after_share is not None
        assert 0 <= b.useful.after_share <= 1
        gaps = b.gaps
        assert gaps.count == state.steps - 1
        assert gaps.median_s is not None and gaps.p90_s is not None and gaps.max_s is not None
        assert 0 <= gaps.median_s <= gaps.p90_s <= gaps.max_s
        tools = sum(float(e.payload.duration_s) for e in events if e.type == "tool.returned")
        assert b.time.tools_s == pytest.approx(tools)


def test_one_pass_over_a_campaign_equals_each_run_alone(campaign_log: Logged) -> None:
    store, campaign, runs = campaign_log
    streamed = {b.run: b for b in behaviours(store.iter_records(correlation=campaign))}
    assert set(streamed) == set(runs)
    for run in runs:
        assert streamed[run] == behaviour(store.read_stream(run))
