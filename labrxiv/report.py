"""Comparing campaigns: best normalized score per paper index, improvement, time and compute.

Read from the read models (curves, ledger, runs) once the projections are up to date.
"""

from dataclasses import dataclass

from sqlalchemy import func, select

from events import EventStore
from projections.curves import curve_points, paper_points
from projections.ledger import ledger_totals
from projections.runs import RUNS
from workers.gym.bundle import Bundle
from workers.gym.scoring import better, over_baseline


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


def summarize(store: EventStore, campaign: str, mode: str, bundle: Bundle) -> CampaignSummary:
    """The summary of a finished campaign whose read models are up to date."""
    primary = bundle.card.subtask(bundle.card.primary)
    with store.engine.connect() as conn:
        papers = sorted(paper_points(conn, campaign), key=lambda p: p.paper_index)
        points = curve_points(conn, campaign)
        totals = ledger_totals(conn, by="campaign", campaign=campaign)
        first, last = conn.execute(
            select(func.min(RUNS.c.first_event_at), func.max(RUNS.c.last_event_at)).where(
                RUNS.c.campaign == campaign
            )
        ).one()
    curve: list[float] = []
    for paper in papers:
        value = paper.best_so_far or 0.0
        curve.append(max(value, curve[-1]) if curve else value)
    best: float | None = None
    per_run: dict[str, float] = {}
    for point in points:
        if best is None or better(primary, point.score, best):
            best = point.score
        per_run[point.run] = max(point.best_so_far, per_run.get(point.run, point.best_so_far))
    return CampaignSummary(
        campaign=campaign,
        mode=mode,
        best_per_paper=curve,
        best_score=best,
        best_per_lab=[per_run[run] for run in sorted(per_run)],
        over_baseline=None if best is None else over_baseline(primary, best),
        seconds=(last - first).total_seconds() if first and last else 0.0,
        compute_seconds=sum(t.compute_seconds for t in totals),
        papers=len(papers),
    )
