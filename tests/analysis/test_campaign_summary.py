"""A campaign's summary from its curve rows: the archive's best after each paper never
falls, each lab keeps its best, and the best raw score is the best in the metric's
direction (the lowest forgetting, not the highest)."""

from dataclasses import dataclass
from functools import partial

from analysis.campaign_summary import summarize_campaign
from workers.gym.card import Subtask
from workers.gym.scoring import over_baseline

FORGETTING = Subtask(
    name="average_forgetting", metric="forgetting", direction="minimize", baseline=0.5, sota=0.1
)


@dataclass(frozen=True)
class Point:
    run: str
    score: float
    normalized_score: float | None
    best_so_far: float


@dataclass(frozen=True)
class Paper:
    paper_index: int
    best_so_far: float | None


def test_a_minimized_metric_summarizes_with_its_lowest_score() -> None:
    points = [
        Point("run-b", 0.3, 0.5, 0.5),
        Point("run-a", 0.2, 0.75, 0.75),
        Point("run-a", 0.4, 0.25, 0.75),
    ]
    papers = [Paper(2, 0.4), Paper(1, 0.5), Paper(3, None)]
    summary = summarize_campaign(
        "c",
        "archive",
        papers,
        points,
        direction=FORGETTING.direction,
        over_baseline=partial(over_baseline, FORGETTING),
        seconds=30.0,
        compute_seconds=6.0,
    )
    assert summary.best_score == 0.2
    assert summary.over_baseline == (0.2 - 0.5) / (0.1 - 0.5)
    assert summary.best_per_paper == [0.5, 0.5, 0.5]
    assert summary.best_per_lab == [0.75, 0.5]
    assert summary.mean_lab_best == 0.625
    assert (summary.papers, summary.seconds_per_paper, summary.compute_per_paper) == (3, 10.0, 2.0)


def test_a_campaign_with_no_score_has_no_best() -> None:
    summary = summarize_campaign(
        "c",
        "isolated",
        [],
        [],
        direction=FORGETTING.direction,
        over_baseline=partial(over_baseline, FORGETTING),
        seconds=0.0,
        compute_seconds=0.0,
    )
    assert (summary.best_score, summary.over_baseline, summary.mean_lab_best) == (None, None, None)
