"""Comparing campaigns: best normalized score per paper index, improvement, time and compute.

Everything is read from the log: the runs' graded attempts, their papers in the order
the archive received them, and the compute seconds of their tool calls.
"""

from dataclasses import dataclass
from pathlib import Path

from events import EventStore
from workers.gym.bundle import Bundle
from workers.gym.scoring import over_baseline
from workers.lab.state import fold


@dataclass(frozen=True)
class CampaignSummary:
    """One campaign's measured curve and costs."""

    campaign: str
    mode: str
    best_per_paper: list[float]
    """Best normalized score of the campaign after its 1st, 2nd… paper."""
    best_score: float | None
    """Best raw primary score of any lab."""
    over_baseline: float | None
    """(best − baseline) / (reference − baseline)."""
    seconds: float
    compute_seconds: float
    papers: int

    @property
    def seconds_per_paper(self) -> float:
        return self.seconds / self.papers if self.papers else 0.0

    @property
    def compute_per_paper(self) -> float:
        return self.compute_seconds / self.papers if self.papers else 0.0


def summarize(store: EventStore, campaign: str, runs: list[str], bundle: Bundle) -> CampaignSummary:
    """The summary of a finished campaign."""
    primary = bundle.card.subtask(bundle.card.primary)
    papers: list[tuple[int, float]] = []  # (position, best normalized of its run at that time)
    best_raw: float | None = None
    compute = 0.0
    starts, ends = [], []
    mode = "?"
    for stream in runs:
        events = store.read_stream(stream)
        state = fold(events)
        mode = "archive" if state.started.reads_archive else "isolated"
        starts.append(state.started_at)
        ends.append(state.last_at)
        best_norm = 0.0
        for event in events:
            payload = event.payload
            if payload.type == "tool.returned":
                compute += payload.duration_s
            elif payload.type == "experiment.scored":
                best_norm = max(best_norm, payload.normalized_score or 0.0)
                if best_raw is None or payload.score > best_raw:
                    best_raw = payload.score
            elif payload.type == "paper.submitted":
                papers.append((event.position or 0, best_norm))
    curve: list[float] = []
    for _position, value in sorted(papers):
        curve.append(max(value, curve[-1]) if curve else value)
    seconds = (max(ends) - min(starts)).total_seconds() if starts else 0.0
    return CampaignSummary(
        campaign=campaign,
        mode=mode,
        best_per_paper=curve,
        best_score=best_raw,
        over_baseline=None if best_raw is None else over_baseline(primary, best_raw),
        seconds=seconds,
        compute_seconds=compute,
        papers=len(papers),
    )


def plot_per_paper(summaries: list[CampaignSummary], out: Path) -> Path:
    """The AgentRxiv plot: best normalized score against paper index, one line per campaign."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(6, 4))
    for summary in summaries:
        xs = list(range(1, len(summary.best_per_paper) + 1))
        axis.plot(
            xs, summary.best_per_paper, marker="o", label=f"{summary.mode} ({summary.campaign})"
        )
    axis.set_xlabel("paper index (archive order)")
    axis.set_ylabel("best normalized score so far")
    axis.set_ylim(0, 1.05)
    axis.grid(alpha=0.3)
    axis.legend()
    figure.tight_layout()
    path = out / "best_per_paper.png"
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path
