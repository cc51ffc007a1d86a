"""Across runs: a comparison table of runs, and how action density and cost go with
final performance (the best normalized score), with bootstrap intervals.

Works on any set of runs (a campaign, several, a whole log) from their behaviour
figures; a row keeps a few numbers of a run, so a campaign of any size is compared in
memory bounded by its run count.
"""

from collections.abc import Iterable
from dataclasses import dataclass

from analysis.correlation import CONFIDENCE, RESAMPLES, Correlation, correlate
from analysis.figures import Behaviour
from runstate.best import NORMALIZED, first_key

PERFORMANCE = "best"
"""The performance figure: the run's best normalized score."""


@dataclass(frozen=True)
class RunRow:
    """One run in the comparison table."""

    run: str
    lab: str | None
    task: str | None
    policy: str | None
    campaign: str | None
    finished: str | None
    best: float | None
    """Best normalized score (final performance); None when no attempt had one."""
    scored: int
    papers: int
    actions: int
    per_hour: float | None
    """Action density: tool calls per hour over the run."""
    duration_s: float
    tokens: int
    reasoning_tokens: int
    dollars: float
    """Known costs only."""
    priced: int
    """Answers and model-using gradings counted."""
    unknown_cost: int
    """Of those, the ones of unknown cost: `dollars` is then a lower bound."""
    best_after_share: float | None
    """Share of the run after the best score last improved."""


@dataclass(frozen=True)
class Across:
    """The comparison of a set of runs."""

    runs: tuple[RunRow, ...]
    correlations: tuple[Correlation, ...]
    resamples: int
    confidence: float
    seed: int


def row(b: Behaviour) -> RunRow:
    """The comparison-table row of a run."""
    return RunRow(
        run=b.run,
        lab=b.lab,
        task=b.task,
        policy=b.policy,
        campaign=b.campaign,
        finished=b.finished,
        best=b.useful.best,
        scored=b.useful.scored,
        papers=b.papers,
        actions=b.density.actions,
        per_hour=b.density.per_hour,
        duration_s=b.duration_s,
        tokens=b.tokens.total,
        reasoning_tokens=b.tokens.reasoning,
        dollars=b.money.dollars,
        priced=b.money.priced,
        unknown_cost=b.money.unknown_cost,
        best_after_share=b.useful.after_share,
    )


def across(
    rows: Iterable[RunRow],
    resamples: int = RESAMPLES,
    seed: int = 0,
    confidence: float = CONFIDENCE,
) -> Across:
    """The table (best run first) and the correlations of density and cost with
    performance, over the runs that have both figures."""
    table = tuple(sorted(rows, key=_rank))
    scored = [r for r in table if r.best is not None]
    unscored = len(table) - len(scored)
    left_out = f"{unscored} run{'s' if unscored != 1 else ''} with no score left out"
    base = left_out if unscored else None

    dense = [r for r in scored if r.per_hour is not None]
    density = correlate(
        "per_hour",
        PERFORMANCE,
        [r.per_hour for r in dense if r.per_hour is not None],
        [r.best for r in dense if r.best is not None],
        resamples,
        seed,
        confidence,
        base,
    )
    # A run with a cost of unknown size has a dollar figure that is only a lower bound:
    # correlating it would treat an unpriced model as cheap (the "$0" complaint).
    priced = [r for r in scored if r.unknown_cost == 0]
    unpriced = len(scored) - len(priced)
    cost_note = base
    if unpriced:
        said = f"{unpriced} run{'s' if unpriced != 1 else ''} with costs of unknown size left out"
        cost_note = f"{base}; {said}" if base else said
    cost = correlate(
        "dollars",
        PERFORMANCE,
        [r.dollars for r in priced],
        [r.best for r in priced if r.best is not None],
        resamples,
        seed,
        confidence,
        cost_note,
    )
    return Across(table, (density, cost), resamples, confidence, seed)


def _rank(r: RunRow) -> tuple[bool, float, str]:
    return (r.best is None, first_key(NORMALIZED, r.best or 0.0), r.run)
