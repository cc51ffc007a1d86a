"""Best so far, with the metric's direction, by one rule (`runstate.best`): on a task where
lower is better, the runs and curves read models, the behaviour tally and the campaign
report name the same attempt as the best, whether the attempts carry normalized scores
(higher is better in either direction) or only raw ones."""

from collections.abc import Iterator
from types import SimpleNamespace
from typing import cast

import pytest
from handmade_log import RunLog, build

from analysis.behaviour import as_record
from analysis.tally import BehaviourTally
from events.payloads import ExperimentScored
from labrxiv.report import summarize
from projections.curves import curve_points
from projections.runner import ProjectionRunner
from projections.runs import runs_of
from runstate.best import best_of, improves, primary_direction, ranked
from workers.gym.bundle import Bundle
from workers.gym.card import Subtask

LOSS = Subtask(name="loss", metric="loss", direction="minimize", baseline=1.0, sota=0.0)
"""A lower-is-better primary subtask: normalized, a loss of x is 1 − x."""
RAW = [0.5, 0.2, 0.4]
"""Three attempts' losses: the second is the best."""


def scored(attempt: int, loss: float, normalized: bool) -> ExperimentScored:
    return ExperimentScored(
        attempt=attempt,
        subtask_scores={"loss": loss, "accuracy": 0.9},
        score=loss,
        directions={"loss": "minimize", "accuracy": "maximize"},
        normalized_score=round(1.0 - loss, 6) if normalized else None,
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
