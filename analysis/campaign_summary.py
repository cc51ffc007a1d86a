"""A campaign's measured curve and costs, for comparing campaigns (isolated against
archive): the best normalized score after each paper, each lab's best, the best raw
score in the metric's direction, time and compute per paper.

Folded from the efficiency curves' rows (any object with their fields: the read model's
`CurvePoint` and `PaperPoint`), so it agrees with `labrxiv curves` by construction.
"""

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

from events.payloads.experiment import Direction
from runstate.best import NORMALIZED, best_of, improves


class ScoredPoint(Protocol):
    """A scored attempt on the efficiency curves."""

    @property
    def run(self) -> str: ...
    @property
    def score(self) -> float: ...
    @property
    def normalized_score(self) -> float | None: ...
    @property
    def best_so_far(self) -> float: ...


class PaperPoint(Protocol):
    """A paper on the AgentRxiv curve."""

    @property
    def paper_index(self) -> int: ...
    @property
    def best_so_far(self) -> float | None: ...


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


def summarize_campaign(
    campaign: str,
    mode: str,
    papers: Iterable[PaperPoint],
    points: Iterable[ScoredPoint],
    direction: Direction,
    over_baseline: Callable[[float], float],
    seconds: float,
    compute_seconds: float,
) -> CampaignSummary:
    """The summary of a campaign from its curve rows (`papers`, `points`), its primary
    metric's `direction` and how that metric places a raw score against the baseline
    (`over_baseline`), its wall time and its tools' compute time. Scores rank by
    `runstate.best`: the curves' best so far is normalized, or raw in the metric's
    direction when an attempt was scored without a normalized score."""
    points = list(points)
    way = NORMALIZED if all(p.normalized_score is not None for p in points) else direction
    curve: list[float] = []
    ordered = sorted(papers, key=lambda p: p.paper_index)
    for paper in ordered:
        held = best_of(
            way, [*curve[-1:], *([] if paper.best_so_far is None else [paper.best_so_far])]
        )
        curve.append(0.0 if held is None else held)
    per_run: dict[str, float] = {}
    for point in points:
        if improves(way, point.best_so_far, per_run.get(point.run)):
            per_run[point.run] = point.best_so_far
    best = best_of(direction, (point.score for point in points))
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
