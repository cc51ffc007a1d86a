"""The `grounded` reviewer: scores a paper from the log, which an LLM reviewer can only
guess at. Soundness from whether each claim matches the grader's score of the attempt it
names; contribution from the measured improvement over the task's baseline and over the
best paper already in the archive; presentation from the paper's structure. The rubric,
with every threshold, is written out in docs/review.md ("The grounded reviewer"); this
module is that text as code, a pure function of the evidence.
"""

import re
from dataclasses import dataclass
from uuid import UUID

from events.payloads import Claim, PaperSubmitted, ReviewForm
from runstate.claims import shown
from runstate.paper_checks import addresses_reviewer
from runstate.verification import graded_value, measured
from workers.review.evidence import Evidence, Graded, measured_score

HEADING = re.compile(r"^#{1,6}\s+\S", re.MULTILINE)
TABLE_ROW = re.compile(r"^\s*\|.*\|\s*$", re.MULTILINE)


@dataclass(frozen=True)
class ClaimCheck:
    """One claim against the grader."""

    claim: Claim
    graded: Graded | None
    """The graded attempt it names, if the run has one."""

    @property
    def status(self) -> str:
        """`verified`, `mismatch` (the grader measured another number) or `unmeasured`:
        whether the claim is the measurement, as the archive verifies it
        (`runstate.verification.measured`)."""
        if self.graded is None:
            return "unmeasured"
        return "verified" if measured(self._claim, self._named) is not None else "mismatch"

    @property
    def measured_value(self) -> float | None:
        """What the grader measured of the claim's subtask, stated or not."""
        return graded_value(self._claim, self._named)

    @property
    def _claim(self) -> dict[str, object]:
        return self.claim.model_dump()

    @property
    def _named(self) -> dict[int, Graded]:
        """The graded attempt the claim names, by the number it names."""
        return {} if self.graded is None else {self.claim.attempt or 0: self.graded}


def review(evidence: Evidence) -> tuple[ReviewForm, list[UUID]]:
    """The grounded review of the paper in `evidence`, and the events it rests on."""
    paper = evidence.paper
    checks = [ClaimCheck(c, evidence.graded.get(c.attempt or 0)) for c in paper.claims]
    score = measured_score(paper, evidence.graded)
    soundness = _soundness(checks)
    contribution = _contribution(score, evidence.baseline, evidence.prior_best)
    presentation = _presentation(paper)
    addresses = addresses_reviewer(paper.title, paper.abstract, paper.body)
    ethics = addresses is not None or bool(evidence.violations)
    contradicted = soundness == 1 and any(c.status == "mismatch" for c in checks)
    rating = _rating(
        score, evidence.baseline, soundness, contribution, presentation, ethics or contradicted
    )
    named = [c.graded for c in checks if c.graded is not None]
    form = ReviewForm(
        summary=_summary(paper, checks, score, evidence),
        strengths=_strengths(checks, score, evidence),
        weaknesses=_weaknesses(checks, score, evidence, addresses),
        questions=[
            f"Which graded attempt measured {c.claim.metric} {c.claim.value:g} on "
            f"{c.claim.subtask}?"
            for c in checks
            if c.status == "unmeasured"
        ],
        soundness=soundness,
        presentation=presentation,
        contribution=contribution,
        rating=rating,
        confidence=_confidence(checks),
        ethics_flag=ethics,
    )
    relied_on = [evidence.event.id, *dict.fromkeys(g.event for g in named), *evidence.violations]
    return form, relied_on


def _soundness(checks: list[ClaimCheck]) -> int:
    statuses = [c.status for c in checks]
    verified, mismatched = statuses.count("verified"), statuses.count("mismatch")
    unmeasured = statuses.count("unmeasured")
    if not checks or verified == 0:
        return 1
    if mismatched:
        return 2 if verified > mismatched else 1
    if unmeasured:
        return 3 if verified >= unmeasured else 2
    return 4


def gain(score: float | None, baseline: float | None) -> float:
    """The measured improvement as a share of the way from the baseline to the state of
    the art (normalized 1.0), in [0, 1]; the score itself when the baseline is unknown."""
    if score is None:
        return 0.0
    if baseline is None or baseline >= 1:
        return min(max(score, 0.0), 1.0)
    return min(max((score - baseline) / (1 - baseline), 0.0), 1.0)


def _contribution(score: float | None, baseline: float | None, prior: float | None) -> int:
    if score is None or score <= (baseline if baseline is not None else 0.0):
        return 1
    if prior is not None and score < prior:
        return 2
    return 4 if gain(score, baseline) >= 0.5 else 3


def _presentation(paper: PaperSubmitted) -> int:
    words = len(paper.abstract.split())
    passed = [
        20 <= words <= 400,
        len(HEADING.findall(paper.body)) >= 2,
        len(TABLE_ROW.findall(paper.body)) >= 3,
        bool(paper.claims) and bool(paper.experiments),
    ]
    return max(1, sum(passed))


def _rating(
    score: float | None,
    baseline: float | None,
    soundness: int,
    contribution: int,
    presentation: int,
    lowest: bool,
) -> int:
    """The rating; 1 when `lowest` (an ethics flag, or claims the grader contradicts)."""
    if lowest:
        return 1
    quality = (
        0.5 * gain(score, baseline)
        + 0.3 * (soundness - 1) / 3
        + 0.1 * (contribution - 1) / 3
        + 0.1 * (presentation - 1) / 3
    )
    rating = 1 + round(9 * quality)
    return min(rating, 4) if soundness <= 2 else rating


def _confidence(checks: list[ClaimCheck]) -> int:
    named = sum(c.graded is not None for c in checks)
    if not checks:
        return 2
    return 5 if named == len(checks) else 4 if named else 3


def _summary(
    paper: PaperSubmitted, checks: list[ClaimCheck], score: float | None, evidence: Evidence
) -> str:
    verified = sum(c.status == "verified" for c in checks)
    baseline = "unknown" if evidence.baseline is None else f"{evidence.baseline:.3f}"
    measured = (
        f"no graded attempt; the task's baseline is {baseline} (normalized)"
        if score is None
        else f"a measured best of {score:.3f} (normalized; task baseline {baseline})"
    )
    prior = (
        "it is the first paper on the task in this archive"
        if evidence.prior_best is None
        else f"the best earlier paper ({evidence.prior_paper}) measured {evidence.prior_best:.3f}"
    )
    return (
        f"'{paper.title}' reports {len(checks)} claim(s) on {paper.task}, {verified} matching "
        f"the grader; its claims name {measured}; {prior}."
    )


def _strengths(checks: list[ClaimCheck], score: float | None, evidence: Evidence) -> list[str]:
    out = [
        f"Claim {c.claim.subtask} {c.claim.metric} = {c.claim.value:g} matches the grader's "
        f"score of attempt {c.claim.attempt}."
        for c in checks
        if c.status == "verified"
    ]
    if score is not None and evidence.baseline is not None and score > evidence.baseline:
        out.append(f"Improves on the task's baseline: {score:.3f} against {evidence.baseline:.3f}.")
    if score is not None and evidence.prior_best is not None and score >= evidence.prior_best:
        out.append(
            f"At least as good as the archive's best earlier paper ({evidence.prior_best:.3f})."
        )
    return out


def _weaknesses(
    checks: list[ClaimCheck], score: float | None, evidence: Evidence, addresses: str | None
) -> list[str]:
    out = []
    for c in checks:
        if c.status == "mismatch" and c.graded is not None:
            value = c.measured_value
            said = "no such score" if value is None else shown(value)
            out.append(
                f"Claim {c.claim.subtask} {c.claim.metric} = {c.claim.value:g} is not what the "
                f"grader measured for attempt {c.claim.attempt} ({said}, or that rounded)."
            )
        elif c.status == "unmeasured":
            out.append(
                f"Claim {c.claim.subtask} {c.claim.metric} = {c.claim.value:g} names no graded "
                "attempt of the run."
            )
    if not checks:
        out.append("The paper makes no structured claim a reader could check.")
    if score is not None and evidence.baseline is not None and score <= evidence.baseline:
        out.append(f"No improvement over the task's baseline ({evidence.baseline:.3f}).")
    if score is not None and evidence.prior_best is not None and score < evidence.prior_best:
        out.append(
            f"Below the best earlier paper in the archive ({evidence.prior_paper}: "
            f"{evidence.prior_best:.3f})."
        )
    if addresses is not None:
        out.append("The paper addresses its reviewer instead of reporting its work.")
    if evidence.violations:
        out.append(f"The run broke the task's rules {len(evidence.violations)} time(s) before it.")
    return out
