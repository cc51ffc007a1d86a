"""Research metrics (projections/metrics.py): read from the read models, so they are the
log's figures whoever serves them, after a projector restart and after a rebuild, and
their label sets stay within the bounds."""

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from handmade_log import RunLog, at, build, interleave
from sqlalchemy import func, select
from test_ledger import model_log

from events import Event, EventStore
from events.ids import derived_id
from events.payloads import (
    Budget,
    CampaignStarted,
    ForkPoint,
    Payload,
    RunInterrupted,
    RunResumed,
    RunStarted,
)
from events.payloads.model import ModelCalled, ModelResponded, Price, Usage
from events.streams import inspect_stream
from projections.catalogue import all_projectors
from projections.ledger import LEDGER
from projections.metrics import OTHER, Bounds, ResearchCollector
from projections.runner import ProjectionRunner
from projections.runs import campaign_wall_seconds
from runstate.budget import run_used
from runstate.fork import fold_standing, loader
from tests.simulated import simulated_run
from workers.lab.campaign_spend import CampaignSpend

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def samples(store: EventStore, bounds: Bounds | None = None) -> Samples:
    """Every research sample, keyed by name and labels."""
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for metric in ResearchCollector(store.engine, bounds or Bounds()).collect()
        for s in metric.samples
    }


def of(found: Samples, name: str) -> dict[tuple[tuple[str, str], ...], float]:
    return {labels: value for (n, labels), value in found.items() if n == name}


def mixed_log() -> list[Event]:
    """Six simulated runs (one unfinished, one with a steps budget) and the ledger tests'
    model calls: every research metric has samples."""
    start = datetime(2026, 1, 1, tzinfo=UTC)
    events: list[Event] = []
    for index in range(5):
        events += simulated_run(f"s{index}", start, attempts=3, seed=index, campaign="c1")
    running = list(simulated_run("s5", start, attempts=3, seed=5, campaign="c1"))[:-1]
    budgeted = RunLog("b", "lab-b", campaign="c1")
    budgeted.add(
        RunStarted(task="digits", lab="lab-b", policy="search", budget=Budget(steps=10)), 0
    )
    budgeted.tool("t1", "bash", 1, 0.5)
    budgeted.tool("t2", "python", 2, 0.5)
    return events + model_log() + interleave(budgeted) + running  # s5 moved last


@pytest.fixture
def store(store_url: str) -> Iterator[EventStore]:
    store = EventStore.from_url(store_url)
    store.append(mixed_log())
    yield store
    store.engine.dispose()


def test_equal_after_a_projector_restart_and_after_a_rebuild(store: EventStore) -> None:
    bounds = Bounds(runs=3, campaigns=1, labs=2, models=1)
    stopped = ProjectionRunner(store, all_projectors(), page=7)
    stopped.catch_up(limit=40)  # a projector stopped part of the way
    partial = samples(store, bounds)
    restarted = ProjectionRunner(EventStore.from_url(str(store.engine.url)), all_projectors())
    restarted.catch_up()  # a new process goes on from the checkpoints
    after_restart = samples(store, bounds)
    assert partial != after_restart, "the first projector must have stopped part of the way"
    ProjectionRunner(store, all_projectors()).rebuild()
    assert samples(store, bounds) == after_restart
    restarted.store.engine.dispose()


def test_figures_are_the_read_models(store: EventStore) -> None:
    ProjectionRunner(store, all_projectors()).catch_up()
    found = samples(store)
    runs = of(found, "labrxiv_runs")
    assert runs[(("finish_reason", "done"), ("status", "finished"))] == 5
    assert runs[(("finish_reason", "none"), ("status", "running"))] == 4  # s5, b, m, n
    assert runs[(("finish_reason", "error"), ("status", "finished"))] == 0  # known: exported
    calls = of(found, "labrxiv_model_calls_total")
    assert calls[(("model", "gpt-x"), ("outcome", "unknown"))] == 1  # r4, never answered
    assert calls[(("model", "local"), ("outcome", "failed"))] == 1
    tokens = of(found, "labrxiv_model_tokens_total")
    assert tokens[(("kind", "cached_input"), ("model", "gpt-x-2026"))] == 400
    assert tokens[(("kind", "reasoning"), ("model", "gpt-x-2026"))] == 100
    dollars = of(found, "labrxiv_model_cost_dollars_total")
    assert dollars[(("lab", "lab-m"), ("model", "gpt-x-2026"))] == pytest.approx(0.0038)
    unknown = of(found, "labrxiv_model_unknown_cost_calls_total")
    with store.engine.connect() as conn:
        query = select(func.count()).where(LEDGER.c.cost_known.is_(False))
        assert sum(unknown.values()) == conn.execute(query).scalar_one() > 0
        # A model none of whose calls has a known cost has no dollars: not a series at 0.
        priced = select(LEDGER.c.model, LEDGER.c.lab).where(LEDGER.c.cost_known.is_(True))
        known = {(("lab", lab), ("model", model)) for model, lab in conn.execute(priced)}
    assert set(dollars) == known and set(unknown) - known
    actions = of(found, "labrxiv_actions_total")
    assert actions[(("lab", "lab-b"), ("phase", "none"), ("tool", "bash"))] == 1
    assert actions[(("lab", "lab-s0"), ("phase", "none"), ("tool", "python"))] == 3
    used = of(found, "labrxiv_run_budget_used")
    left = of(found, "labrxiv_run_budget_left")
    assert used[(("budget", "steps"), ("run", "run-b"))] == 2
    assert left[(("budget", "steps"), ("run", "run-b"))] == 8


def test_runs_labs_and_models_past_their_bounds_are_aggregated(store: EventStore) -> None:
    ProjectionRunner(store, all_projectors()).catch_up()
    everything = samples(store)
    bounded = samples(store, Bounds(runs=2, campaigns=1, labs=1, models=1))
    best = of(bounded, "labrxiv_run_best_normalized_score")
    shown = {dict(labels)["run"] for labels in best} - {OTHER}
    assert shown == {"run-s5"}, "the 2 most recent running runs: s5 and b (no score yet)"
    all_best = of(everything, "labrxiv_run_best_normalized_score")
    others = [v for labels, v in all_best.items() if dict(labels)["run"] not in shown]
    assert best[(("run", OTHER), ("task", "simulated-task"))] == max(others)
    assert of(bounded, "labrxiv_exporter_other_runs")[()] == 9 - 2
    for name in ("labrxiv_actions_total", "labrxiv_model_cost_dollars_total"):
        labs = {dict(labels)["lab"] for labels in of(bounded, name)}
        assert len(labs - {OTHER}) <= 1, (name, labs)
        # Aggregated, not dropped: the sums are those of every lab.
        assert sum(of(bounded, name).values()) == pytest.approx(sum(of(everything, name).values()))
    models = {dict(labels)["model"] for labels in of(bounded, "labrxiv_model_tokens_total")}
    assert len(models - {OTHER}) == 1 and OTHER in models


def test_a_campaigns_budget_counts_its_reviews_as_the_lab_does(sqlite_url: str) -> None:
    """The campaign budget gauges count what the lab's and the review's check counts
    (`CampaignSpend`): every stream of the campaign, its reviewers' and the inspector's
    calls included."""

    def event(stream: str, version: int, payload: Payload, second: int) -> Event:
        return Event(
            id=derived_id(f"{stream}:{version}", at(second)),
            stream=stream,
            version=version,
            occurred_at=at(second),
            correlation_id="c1",
            actor="x",
            payload=payload,
        )

    def call(stream: str, version: int, second: int, cost: float) -> list[Event]:
        called = ModelCalled(
            call_id="k", request_id="r", attempt=1, model="m", provider="p", messages=1
        )
        answered = _priced_answer("k", Usage(input_tokens=10, output_tokens=10), cost)
        return [
            event(stream, version, called, second),
            event(stream, version + 1, answered, second + 1),
        ]

    started = CampaignStarted(
        task="digits", labs=1, mode="isolated", seed=0, budget=Budget(dollars=1.0)
    )
    lab = RunLog("c1-0", "lab-0", campaign="c1")
    lab.start(1)
    log = [event("campaign-c1", 0, started, 0), *lab.events]
    log += call("run-c1-0", 1, 2, 0.01) + call("review-p1", 0, 5, 0.02)
    log += call(inspect_stream("abc"), 0, 8, 0.26)  # `analyze --inspector` of run-c1-0
    runner = build(sqlite_url, log)
    lab_says = CampaignSpend(runner.store).used("c1", "run-c1-0")
    assert lab_says.dollars == pytest.approx(0.29)
    collected = {m.name: m for m in ResearchCollector(runner.store.engine).collect()}
    used = {s.labels["budget"]: s.value for s in collected["labrxiv_campaign_budget_used"].samples}
    left = {s.labels["budget"]: s.value for s in collected["labrxiv_campaign_budget_left"].samples}
    assert used["dollars"] == pytest.approx(0.29)
    assert left["dollars"] == pytest.approx(0.71)
    dollars = {
        (s.labels["model"], s.labels["lab"]): s.value
        for s in collected["labrxiv_model_cost_dollars"].samples
        if s.name.endswith("_total")
    }
    # The run's, the review's and the inspection's calls are three groups of the ledger
    # (kinds) of one model and lab label: summed as decimals, 0.29 exactly, where float
    # sums of the three in any order are not.
    assert dollars == {("m", "x"): 0.29}


def _priced_answer(call: str, usage: Usage, dollars: float) -> ModelResponded:
    """The answer of model `m` to `call`, at a known cost of `dollars`."""
    price = Price(input_per_mtok=1, cached_input_per_mtok=1, output_per_mtok=1, source="t")
    return ModelResponded(
        call_id=call,
        model="m",
        usage=usage,
        latency_s=1,
        price=price,
        cost_usd=dollars,
        cost_known=True,
    )


def _model_call(log: RunLog, call: str, seconds: float, tokens: int, dollars: float) -> None:
    """A model call of `log`'s run, answered a second later with `tokens` (half input,
    half output) at a known cost of `dollars`."""
    log.add(
        ModelCalled(call_id=call, request_id=call, attempt=1, model="m", provider="p", messages=1),
        seconds,
    )
    usage = Usage(input_tokens=tokens // 2, output_tokens=tokens - tokens // 2)
    log.add(_priced_answer(call, usage, dollars), seconds + 1)


def test_a_forks_run_budget_counts_its_trajectory_as_the_lab_does(sqlite_url: str) -> None:
    """The parent makes 1 step, 1 attempt and a call of 100 tokens ($0.25) before the
    fork point; the fork makes 2 steps, 1 attempt and a call of 40 tokens ($0.10). The
    fork's budget gauges are what its budget check counts (`runstate.budget.run_used` on
    its folded state): the trajectory's, 3 steps, 2 attempts, 140 tokens, $0.35."""
    parent = RunLog("a", "lab-a", campaign="c1")
    parent.start(0)
    parent.tool("t1", "evaluate", 1, 1)
    parent.score(1, 0.5, 0.5, 3)
    _model_call(parent, "k1", 4, 100, 0.25)
    point = ForkPoint(run=parent.stream, step=1, version=len(parent.events) - 1)
    parent.tool("t2", "bash", 6, 1)  # after the fork point: not the fork's
    fork = RunLog("f", "lab-f", campaign="c1")
    limits = Budget(attempts=5, steps=10, tokens=1000, dollars=1.0)
    fork.add(
        RunStarted(task="digits", lab="lab-f", policy="handmade", budget=limits, forked_from=point),
        10,
    )
    fork.tool("t3", "bash", 11, 1)
    fork.tool("t4", "evaluate", 13, 1)
    fork.score(2, 0.7, 0.7, 15)
    _model_call(fork, "k2", 16, 40, 0.10)
    runner = build(sqlite_url, interleave(parent, fork))
    state = fold_standing(runner.store.read_stream("run-f"), loader(runner.store))
    lab_counts = run_used(state, state.last_at)
    found = samples(runner.store)
    runner.store.engine.dispose()
    used = {
        dict(labels)["budget"]: value
        for labels, value in of(found, "labrxiv_run_budget_used").items()
        if dict(labels)["run"] == "run-f"
    }
    assert (used["attempts"], used["steps"], used["tokens"]) == (2, 3, 140)
    assert used["dollars"] == pytest.approx(0.35)
    for budget in ("attempts", "steps", "tokens", "dollars"):
        assert used[budget] == pytest.approx(lab_counts[budget]), budget
    left = of(found, "labrxiv_run_budget_left")
    assert left[(("budget", "steps"), ("run", "run-f"))] == 7


def test_a_campaigns_wall_time_leaves_out_the_night_its_runs_stood_stopped(
    sqlite_url: str,
) -> None:
    """A campaign's run works 10 s, stands stopped overnight (8 h), and works 5 s more
    once resumed: its campaign used 15 s of wall time, as the campaign's summary counts
    it (`projections.runs.campaign_wall_seconds`), not the 8 h from its first event."""
    night = 8 * 3600
    started = CampaignStarted(
        task="digits", labs=1, mode="isolated", seed=0, budget=Budget(wall_seconds=3600)
    )
    campaign = Event(
        id=derived_id("campaign-c1:0", at(0)),
        stream="campaign-c1",
        version=0,
        occurred_at=at(0),
        correlation_id="c1",
        actor="labrxiv",
        payload=started,
    )
    lab = RunLog("c1-0", "lab-0", campaign="c1")
    lab.start(0)
    lab.tool("t1", "bash", 1, 9)
    lab.add(RunInterrupted(detail="Ctrl-C in labrxiv campaign"), 10)
    lab.add(RunResumed(), 10 + night)
    lab.tool("t2", "bash", 11 + night, 3)
    lab.finish(15 + night)
    runner = build(sqlite_url, [campaign, *lab.events])
    with runner.store.engine.connect() as conn:
        summary_says = campaign_wall_seconds(conn, "c1")
    found = samples(runner.store)
    runner.store.engine.dispose()
    used = of(found, "labrxiv_campaign_budget_used")
    left = of(found, "labrxiv_campaign_budget_left")
    key = (("budget", "wall_seconds"), ("campaign", "c1"))
    assert used[key] == 15.0 == summary_says
    assert left[key] == 3600 - 15.0
