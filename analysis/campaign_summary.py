"""A campaign's measured curve and costs, for comparing campaigns (isolated against
archive): the best normalized score after each paper, each lab's best, the best raw
score in the metric's direction, time and compute per paper.

Folded from the efficiency curves' rows (any object with their fields: the read model's
`CurvePoint` and `PaperPoint`), so it agrees with `labrxiv curves` by construction.
"""

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol


class ScoredPoint(Protocol):
    """A scored attempt on the efficiency curves."""

    @property
    def run(self) -> str: ...
    @property
    def score(self) -> float: ...
    @property
    def best_so_far(self) -> float: ...


class PaperPoint(Protocol):
    """A paper on the AgentRxiv curve."""

    @property
    def paper_index(self) -> int: ...
    @property
    def best_so_far(self) -> float | None: ...


Better = Callable[[float, float], bool]
"""Whether the first raw score is better than the second in the primary metric's
direction (`workers.gym.scoring.better` on the task's primary subtask)."""


@dataclass(frozen=True)
class CampaignSummary:
    """One campaign's measured curve and costs."""

    campaign: str
    mode: str
    best_per_paper: list[float]
    """Best normalized score the archive held after the campaign's 1st, 2nd… paper."""
    best_score: float | None
    """Best raw primary score of any lab."""
    best_per_lab: list[float]
    """Each run's best normalized score at its end, in run order."""
    over_baseline: float | None
    """(best − baseline) / (reference − baseline)."""
    seconds: float
    compute_seconds: float
    papers: int

    @property
    def mean_lab_best(self) -> float | None:
        """The mean over the labs of each lab's best normalized score."""
        return sum(self.best_per_lab) / len(self.best_per_lab) if self.best_per_lab else None

    @property
    def seconds_per_paper(self) -> float:
        return self.seconds / self.papers if self.papers else 0.0

    @property
    def compute_per_paper(self) -> float:
        return self.compute_seconds / self.papers if self.papers else 0.0


def best_raw_score(scores: Iterable[float], better: Better) -> float | None:
    """The best of `scores` in the metric's direction; None when there is none. The
    summary's one rule for its raw best."""
    best: float | None = None
    for score in scores:
        if best is None or better(score, best):
            best = score
    return best


def summarize_campaign(
    campaign: str,
    mode: str,
    papers: Iterable[PaperPoint],
    points: Iterable[ScoredPoint],
    better: Better,
    over_baseline: Callable[[float], float],
    seconds: float,
    compute_seconds: float,
) -> CampaignSummary:
    """The summary of a campaign from its curve rows (`papers`, `points`), how its primary
    metric ranks raw scores (`better`) and places them against the baseline
    (`over_baseline`), its wall time and its tools' compute time."""
    curve: list[float] = []
    ordered = sorted(papers, key=lambda p: p.paper_index)
    for paper in ordered:
        value = paper.best_so_far or 0.0
        curve.append(max(value, curve[-1]) if curve else value)
    points = list(points)
    per_run: dict[str, float] = {}
    for point in points:
        per_run[point.run] = max(point.best_so_far, per_run.get(point.run, point.best_so_far))
    best = best_raw_score((point.score for point in points), better)
    return CampaignSummary(
        campaign=campaign,
        mode=mode,
        best_per_paper=curve,
        best_score=best,
        best_per_lab=[per_run[run] for run in sorted(per_run)],
        over_baseline=None if best is None else over_baseline(best),
        seconds=seconds,
        compute_seconds=compute_seconds,
        papers=len(ordered),
    )
