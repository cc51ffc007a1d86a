"""Best so far, with the metric's direction, by one rule (`runstate.best`): on a task where
lower is better, the runs and curves read models, the behaviour tally, the campaign
report, the campaigns listing, the metrics and the detectors name the same attempt (or
run) as the best, whether the attempts carry normalized scores (higher is better in
either direction) or only raw ones; of attempts whose normalized scores tie, the best
raw one."""

import json
from collections.abc import Iterator
from types import SimpleNamespace
from typing import cast

import orjson
import pytest
from handmade_log import RunLog, build

from analysis.behaviour import as_record
from analysis.detectors import DETECTORS
from analysis.tally import BehaviourTally
from analysis.tally_state import state_of, tally_from
from events.payloads import Budget, Claim, ExperimentScored, PaperSubmitted
from labrxiv.report import summarize
from projections.campaigns import campaigns_of
from projections.curves import curve_points
from projections.metrics import Bounds, research_metrics
from projections.runner import ProjectionRunner
from projections.runs import runs_of
from runstate.best import (
    best_of,
    best_ranked,
    best_scored,
    first_key,
    improves,
    outranks,
    primary_direction,
    ranked,
)
from tests.analysis.runlog import RunLog as DetectorLog
from tests.analysis.runlog import sha
from workers.gym.bundle import Bundle
from workers.gym.card import Subtask

LOSS = Subtask(name="loss", metric="loss", direction="minimize", baseline=1.0, sota=0.0)
"""A lower-is-better primary subtask: normalized, a loss of x is 1 − x."""
RAW = [0.5, 0.2, 0.4]
"""Three attempts' losses: the second is the best."""


def scored(attempt: int, loss: float, normalized: bool, **more: float) -> ExperimentScored:
    """An attempt scored `loss`; normalized, 1 − loss clipped to [0, 1]."""
    return ExperimentScored(
        attempt=attempt,
        subtask_scores={"loss": loss, "accuracy": 0.9},
        score=loss,
        directions={"loss": "minimize", "accuracy": "maximize"},
        normalized_score=min(1.0, max(0.0, round(1.0 - loss, 6))) if normalized else None,
        **more,  # type: ignore[arg-type]
    )


@pytest.fixture(params=[True, False], ids=["normalized", "raw-only"])
def campaign(sqlite_url: str, request: pytest.FixtureRequest) -> Iterator[ProjectionRunner]:
    run = RunLog("a", "lab-a", campaign="c1")
    run.start(0)
    for attempt, loss in enumerate(RAW, start=1):
        run.add(scored(attempt, loss, request.param), attempt, actor="grader:digits")
    run.paper("p-a1", 4)
    run.finish(5)
    runner = build(sqlite_url, run.events)
    yield runner
    runner.store.engine.dispose()


def test_a_lower_is_better_task_has_one_best_everywhere(campaign: ProjectionRunner) -> None:
    store = campaign.store
    normalized = (
        store.read_stream("run-a")[1].payload.normalized_score is not None  # type: ignore[union-attr]
    )
    best = 0.8 if normalized else 0.2  # the second attempt's, normalized or raw
    with store.engine.connect() as conn:
        (row,) = runs_of(conn, campaign="c1")
        points = curve_points(conn, campaign="c1")
    assert row.best_score == pytest.approx(best)
    assert [p.best_so_far for p in points] == pytest.approx([points[0].best_so_far, best, best])
    bundle = cast(
        Bundle, SimpleNamespace(card=SimpleNamespace(primary="loss", subtask=lambda _: LOSS))
    )
    summary = summarize(store, "c1", "isolated", bundle)
    assert summary.best_score == 0.2, "the report's best raw score: the lowest loss"
    assert summary.best_per_lab == pytest.approx([best])
    assert summary.best_per_paper == pytest.approx([best])
    tally = BehaviourTally("run-a")
    for record in store.iter_records(stream="run-a"):
        tally.add(as_record(record))
    useful = tally.result().useful
    if normalized:
        assert (useful.best, useful.best_attempt) == (pytest.approx(best), 2)
    else:  # the tally compares runs: it ranks normalized scores only
        assert useful.best is None


def test_the_rule() -> None:
    assert best_of("minimize", RAW) == 0.2 and best_of("maximize", RAW) == 0.5
    assert best_of("minimize", []) is None
    assert improves("minimize", 0.2, None) and not improves("minimize", 0.5, 0.2)
    raw = scored(1, 0.5, normalized=False).model_dump(mode="json")
    assert ranked(raw) == (0.5, "minimize")
    assert ranked(scored(1, 0.5, normalized=True).model_dump(mode="json")) == (0.5, "maximize")
    unrecorded = {"score": 0.5, "subtask_scores": {"loss": 0.5}}
    assert primary_direction(unrecorded) == "maximize"
    tie = raw | {"subtask_scores": {"loss": 0.5, "accuracy": 0.5}}
    assert primary_direction(tie) == "maximize", "subtasks of both directions have the score"

    assert best_ranked([]) is None
    assert best_ranked([(0.5, "minimize"), (0.2, "minimize")]) == (0.2, "minimize")
    assert sorted([0.5, 0.2, 0.4], key=lambda x: first_key("minimize", x)) == [0.2, 0.4, 0.5]
    assert sorted([0.5, 0.2, 0.4], key=lambda x: first_key("maximize", x)) == [0.5, 0.4, 0.2]


def test_normalized_ties_go_to_the_best_raw_score() -> None:
    """Losses past the reference (0) all normalize to 1: the lowest loss is the best."""
    clipped = [
        scored(n, loss, True).model_dump(mode="json")
        for n, loss in [(1, 0.5), (2, -0.1), (3, -0.3), (4, -0.2)]
    ]
    assert [p["normalized_score"] for p in clipped] == [0.5, 1.0, 1.0, 1.0]
    assert outranks(clipped[2], (1.0, -0.1)) and not outranks(clipped[3], (1.0, -0.3))
    assert not outranks(clipped[0], (1.0, -0.3))
    top = best_scored(clipped)
    assert top is not None and top["attempt"] == 3
    same = [clipped[1], clipped[1] | {"attempt": 9}]
    assert best_scored(same) == clipped[1], "of equals, the first"
    assert best_scored([]) is None


def test_the_tally_names_the_best_raw_of_tied_attempts(sqlite_url: str) -> None:
    run = RunLog("a", "lab-a", campaign="c1")
    run.start(0)
    for attempt, loss in enumerate([0.5, -0.1, -0.3, -0.2], start=1):
        run.add(scored(attempt, loss, True), attempt, actor="grader:digits")
    run.finish(5)
    runner = build(sqlite_url, run.events)
    records = [as_record(r) for r in runner.store.iter_records(stream="run-a")]
    runner.store.engine.dispose()
    tally = BehaviourTally("run-a")
    for record in records[:3]:  # through the second attempt, then saved and loaded
        tally.add(record)
    tally = tally_from("run-a", orjson.loads(orjson.dumps(state_of(tally))))
    for record in records[3:]:
        tally.add(record)
    useful = tally.result().useful
    assert (useful.best, useful.best_attempt, useful.best_at_s) == (1.0, 3, 3.0)


@pytest.fixture(params=[True, False], ids=["normalized", "raw-only"])
def three_runs(sqlite_url: str, request: pytest.FixtureRequest) -> Iterator[ProjectionRunner]:
    """Three runs of one campaign and task: their bests are losses 0.2, 0.4 and 0.3; the
    last run moved last."""
    events = []
    for index, (name, losses) in enumerate([("a", [0.5, 0.2]), ("b", [0.4]), ("c", [0.3])]):
        run = RunLog(name, f"lab-{name}", campaign="c1")
        run.start(index * 10)
        for attempt, loss in enumerate(losses, start=1):
            run.add(scored(attempt, loss, request.param), index * 10 + attempt)
        events += run.events
    runner = build(sqlite_url, events)
    yield runner
    runner.store.engine.dispose()


def test_the_best_of_several_runs_is_in_the_metric_direction(
    three_runs: ProjectionRunner,
) -> None:
    with three_runs.store.engine.connect() as conn:
        rows = runs_of(conn, campaign="c1")
        normalized = rows[0].best_direction == "maximize"
        best = 0.8 if normalized else 0.2  # run a's
        assert [r.best_direction for r in rows] == ["maximize" if normalized else "minimize"] * 3
        (listed,) = campaigns_of(conn)
        assert listed.best == pytest.approx(best)
        metrics = research_metrics(conn, Bounds(runs=1))
    (family,) = [m for m in metrics if m.name == "labrxiv_run_best_normalized_score"]
    other = {s.labels["run"]: s.value for s in family.samples}
    assert other == pytest.approx({"run-c": 0.7 if normalized else 0.3, "other": best})


def test_the_detectors_cite_the_best_attempt_in_its_direction() -> None:
    """A paper's method is what its best cited attempt ran; a weak conclusion cites the
    best attempt, the best raw one of scores tied below the baseline."""
    log = DetectorLog(Budget(attempts=10))
    for lr, loss in [(0.1, 0.5), (0.2, 0.2), (0.3, 0.4)]:
        written = {"path": "config.json", "content": json.dumps({"lr": lr})}
        log.call("write_file", written, written=[("config.json", sha(str(lr)))])
        log.attempts += 1
        made = scored(log.attempts, loss, False)
        log.call("evaluate", preview=f"attempt {log.attempts}", then=[made])
    claims = [Claim(subtask="loss", metric="loss", value=0.2, attempt=n) for n in (1, 2, 3)]
    submitted = PaperSubmitted(
        paper_id="p-1",
        task="t",
        title="T",
        abstract="A",
        body="B",
        claims=claims,
        method={"lr": 0.2},
    )
    log.call("submit_paper", {"title": "T"}, then=[submitted])
    assert DETECTORS["config_mismatch"](log.events) == []

    weak = DetectorLog(Budget(attempts=10))
    ids = []
    for loss in [1.5, 1.2, 1.4]:  # all at or below the baseline: normalized 0
        weak.attempts += 1
        made = scored(weak.attempts, loss, True, baseline_normalized=0.2)
        ids.append(weak.call("evaluate", preview="", then=[made])[-1].id)
    weak.call("finish", {"summary": "done"})
    weak.finish()
    (finding,) = DETECTORS["weak_conclusion"](weak.events)
    assert finding.events[1] == ids[1]
