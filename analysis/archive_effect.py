"""The archive's effect, measured over seeds: isolated campaigns against archive campaigns
of the same labs, budget and seeds, compared seed by seed.

`bench/archive_vs_isolated.py` measures it and records it beside the task bundle
(`baselines/archive_effect.json`, an `ArchiveEffect`); `labrxiv demo` reads the record
and states it, so the demo's one seed is shown against the distribution it comes from.
Three paired figures: the campaign's best (the frontier: any lab's best, normalized),
its best raw score on the primary metric (what a relative gain is taken of, as
AgentRxiv's 70.2% → 78.2% on MATH-500 is +11.4%), and the mean over the labs of each
lab's own best.
"""

import math
import statistics
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from events.payloads.experiment import Direction

RECORD = Path("baselines") / "archive_effect.json"
"""Where a task bundle keeps its measured effect, relative to the bundle's folder."""


class Paired(BaseModel):
    """One figure of each seed's pair of campaigns, compared over the seeds."""

    model_config = ConfigDict(frozen=True)

    isolated: list[float]
    archive: list[float]
    """Per seed, in seed order."""
    ahead: int
    behind: int
    tied: int
    sign_p: float
    """One-sided sign test: P(at least `ahead` of the untied seeds favour the archive)
    if neither mode is better."""
    wilcoxon_p: float
    """One-sided Wilcoxon signed-rank test of archive > isolated (tied seeds dropped):
    unlike the sign test it weighs how far apart the modes are on each seed."""

    @property
    def differences(self) -> list[float]:
        return [a - i for a, i in zip(self.archive, self.isolated, strict=True)]


def paired(archive: Sequence[float], isolated: Sequence[float]) -> Paired:
    """The comparison of `archive` against `isolated`, seed by seed (higher is better)."""
    diff = [a - i for a, i in zip(archive, isolated, strict=True)]
    ahead, behind = sum(d > 0 for d in diff), sum(d < 0 for d in diff)
    return Paired(
        isolated=list(isolated),
        archive=list(archive),
        ahead=ahead,
        behind=behind,
        tied=len(diff) - ahead - behind,
        sign_p=sign_test(ahead, behind),
        wilcoxon_p=wilcoxon_greater(diff),
    )


def sign_test(ahead: int, behind: int) -> float:
    """P(at least `ahead` of `ahead + behind` untied seeds favour one mode) by chance."""
    untied = ahead + behind
    return sum(math.comb(untied, k) for k in range(ahead, untied + 1)) / 2**untied


def wilcoxon_greater(diff: Sequence[float]) -> float:
    """The one-sided Wilcoxon signed-rank p of `diff` > 0 (zeros dropped); 1 when every
    seed tied."""
    from scipy.stats import wilcoxon  # here: reading a record needs no scipy

    if not any(diff):
        return 1.0
    return float(wilcoxon(list(diff), zero_method="wilcox", alternative="greater").pvalue)


def spread(values: Sequence[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (0 for one value)."""
    return statistics.mean(values), statistics.stdev(values) if len(values) > 1 else 0.0


def stderr(values: Sequence[float]) -> float:
    """The standard error of the mean."""
    return statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else 0.0


def relative_gain(
    archive: Sequence[float], isolated: Sequence[float], direction: Direction
) -> float:
    """How much better the archive's mean raw score is than the isolated mean, as a
    fraction of the isolated mean (a minimized metric: how much lower)."""
    iso, arc = statistics.mean(isolated), statistics.mean(archive)
    if iso == 0:
        return 0.0
    return (arc - iso) / abs(iso) if direction == "maximize" else (iso - arc) / abs(iso)


class ArchiveEffect(BaseModel):
    """What `bench/archive_vs_isolated.py` measured on one task, as recorded."""

    model_config = ConfigDict(frozen=True)

    task: str
    seeds: int
    labs: int
    papers: int
    attempts: int
    """Graded attempts a lab."""
    primary: str
    metric: str
    direction: Direction
    measured_at: str
    """When the bench ended (UTC, ISO 8601)."""
    commit: str
    """The code measured (`git rev-parse --short HEAD`; `unknown` outside a checkout)."""
    frontier: Paired
    """The campaign's best normalized score after its last paper."""
    frontier_raw: Paired
    """The campaign's best raw score on the primary subtask."""
    labs_best: Paired
    """The mean over the campaign's labs of each lab's best normalized score."""
    per_paper: dict[str, list[list[float]]]
    """By mode, per seed: the campaign's best normalized score after each paper."""

    @property
    def gain(self) -> float:
        """The mean relative gain of the archive at the frontier, on the raw score."""
        return relative_gain(self.frontier_raw.archive, self.frontier_raw.isolated, self.direction)

    def curve(self, mode: str) -> tuple[list[float], list[float]]:
        """Mean and standard deviation over the seeds of the best after each paper
        (as far as every seed's campaign got)."""
        runs = self.per_paper[mode]
        papers = min(len(run) for run in runs)
        points = [spread([run[i] for run in runs]) for i in range(papers)]
        return [m for m, _ in points], [s for _, s in points]

    def said(self) -> str:
        """The effect in two sentences, with its spread and where it comes from."""
        raw = self.frontier_raw
        iso, iso_sd = spread(raw.isolated)
        arc, arc_sd = spread(raw.archive)
        labs_iso, _ = spread(self.labs_best.isolated)
        labs_arc, _ = spread(self.labs_best.archive)
        return (
            f"Over {self.seeds} seeds ({self.labs} labs, {self.papers} papers and "
            f"{self.attempts} graded attempts a lab; `bench/archive_vs_isolated.py`, "
            f"{self.measured_at[:10]}, commit {self.commit}), the best {self.primary} any lab "
            f"reached was {arc:.3f} ± {arc_sd:.3f} with the archive against {iso:.3f} ± "
            f"{iso_sd:.3f} isolated ({self.gain:+.1%} relative, "
            f"{'higher' if self.direction == 'maximize' else 'lower'} being better): the "
            "archive campaign was "
            f"ahead on {raw.ahead} seeds, behind on {raw.behind}, tied on {raw.tied} "
            f"(one-sided Wilcoxon p = {raw.wilcoxon_p:.3g}). Each lab's own best, normalized, "
            f"averaged {labs_arc:.3f} with the archive against {labs_iso:.3f} isolated "
            f"(p = {self.labs_best.wilcoxon_p:.3g})."
        )


class BadRecord(ValueError):
    """A recorded effect that cannot be read; the message says which file and why."""


def read_effect(bundle: Path) -> ArchiveEffect | None:
    """The effect recorded in the task bundle at `bundle`; None when none was. Raises
    `BadRecord` (one line) when the file is there but is not a record."""
    path = bundle / RECORD
    if not path.is_file():
        return None
    try:
        return ArchiveEffect.model_validate_json(path.read_bytes())
    except (OSError, ValueError) as exc:  # pydantic's ValidationError is a ValueError
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise BadRecord(
            f"{path}: not a recorded archive effect ({first}); "
            "`bench/archive_vs_isolated.py --record` writes it again"
        ) from None
