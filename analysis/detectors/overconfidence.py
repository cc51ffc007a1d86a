"""Overconfidence: concluding while the evidence says otherwise (docs/analysis.md,
"Overconfidence"; MAST FM-1.5, unaware of termination conditions, and FM-3.3, incorrect
verification).

- `weak_conclusion`: a paper, or a finish, while the best score is below the baseline
  (or nothing was scored) and budget remains to do better;
- `unmeasured_claim`: a number a paper reports without the attempt that measured it;
- `misreported_claim`: what a paper reports that the archive does not verify
  (`runstate.verification`, the rule the archive and the reviewer use): a number whose
  attempt was never scored, or scored something else, or an experiment credited to a
  configuration its attempt did not run.
"""

from collections.abc import Iterator
from typing import Any
from uuid import UUID

from analysis.detectors.base import Seen, detector
from analysis.detectors.view import DetectorView, best, used
from events.payloads import ExperimentScored, PaperSubmitted
from events.recorded import Fact
from runstate import RunState
from runstate.best import best_scored
from runstate.claims import shown
from runstate.verification import checked_experiments, measured

NEARLY_SPENT = 0.9
"""A limit used this far leaves no budget worth the name."""


@detector("weak_conclusion", "overconfidence")
def weak_conclusion(run: DetectorView) -> Iterator[Seen]:
    """Each paper or finish made below the baseline with budget left."""
    baseline = run.baseline()
    for call in run.calls:
        if call.tool == "submit_paper":
            papers = [e for e in call.caused if isinstance(e.payload, PaperSubmitted)]
            if not papers:
                continue  # refused as malformed: nothing was concluded
            proof: UUID = papers[0].id
        elif call.tool == "finish" and call.ok:
            proof = call.invoked
        else:
            continue
        top = best(call.state)
        if top is not None and (baseline is None or top >= baseline):
            continue
        left = budget_left(call.state)
        if left is None:
            continue
        if top is None:
            measured = "no attempt was scored"
            evidence: list[UUID | None] = [proof, run.started.id]
        else:
            measured = (
                f"the best normalized score was {top:.6g}, below the baseline's {baseline:.6g}"
            )
            evidence = [proof, _best_attempt(run, call.state), run.started.id]
        yield "medium", f"{_what(call.tool)} while {measured}, with {left} left", evidence


@detector("unmeasured_claim", "overconfidence")
def unmeasured_claim(run: DetectorView) -> Iterator[Seen]:
    """Each paper number given without the attempt that measured it."""
    for event in run.of(PaperSubmitted):
        if not isinstance(event.payload, PaperSubmitted):
            continue
        loose = [c for c in event.payload.claims if c.attempt is None]
        if loose:
            shown = ", ".join(f"{c.subtask}={c.value:g}" for c in loose[:5])
            yield (
                "medium",
                f"paper {event.payload.paper_id} reports {shown} with no attempt",
                [event.id],
            )


@detector("misreported_claim", "overconfidence")
def misreported_claim(run: DetectorView) -> Iterator[Seen]:
    """Each paper number the archive does not verify (`runstate.verification`, against
    the attempts graded before the paper, `DetectorView.graded`): its attempt was not
    graded before the paper, or graded something else (claims and the experiments table
    alike); and each experiment credited to a configuration its attempt did not run."""
    for event in run.of(PaperSubmitted):
        paper = event.payload
        if not isinstance(paper, PaperSubmitted):
            continue
        graded = run.graded[event.id]
        reported = [(c.attempt, c.subtask, c.value) for c in paper.claims if c.attempt]
        for experiment in paper.experiments:
            reported += [(experiment.attempt, k, v) for k, v in experiment.scores.items()]
        for attempt, subtask, value in reported:
            yield from _misreported(run, event, attempt, subtask, value)
        experiments = [e.model_dump(mode="json") for e in paper.experiments]
        for checked in checked_experiments(experiments, graded):
            done = graded.get(checked["attempt"])
            scored = run.scored_attempt(checked["attempt"], before=event.id)
            if checked["verified"] or done is None or scored is None:
                continue
            if checked["config"] != done.config:
                yield (
                    "high",
                    (
                        f"paper {paper.paper_id} credits attempt {checked['attempt']} to "
                        f"{_settings(checked['config'], done.config)}; the attempt ran "
                        f"{_settings(done.config, checked['config'])}"
                    ),
                    [event.id, scored.id],
                )


def _misreported(
    run: DetectorView, paper: Fact, attempt: int, subtask: str, value: float
) -> Iterator[Seen]:
    """A finding when the number `value` the paper reports for `subtask` of `attempt` is
    not what the grader measured before the paper (`runstate.verification.measured`)."""
    assert isinstance(paper.payload, PaperSubmitted)
    said = {"attempt": attempt, "subtask": subtask, "value": value}
    graded = run.graded[paper.id]
    if measured(said, graded) is not None:
        return
    done = graded.get(attempt)
    scored = run.scored_attempt(attempt, before=paper.id)
    paper_id = paper.payload.paper_id
    if done is None or done.scores is None or scored is None:
        yield (
            "high",
            (
                f"paper {paper_id} reports {subtask}={value:g} from attempt {attempt}, "
                "which the grader never scored"
            ),
            [paper.id],
        )
        return
    assert isinstance(scored.payload, ExperimentScored)
    grade = done.scores.get(subtask)
    shown_grade = "no such score" if grade is None else shown(grade)
    way = scored.payload.directions.get(subtask)
    if grade is not None and way is not None:
        shown_grade += f" ({_which_side(value, grade, way)})"
    yield (
        "high",
        (
            f"paper {paper_id} reports {subtask}={value:g} from attempt {attempt}; "
            f"the grader measured {shown_grade}"
        ),
        [paper.id, scored.id],
    )


def _settings(config: dict[str, Any], other: dict[str, Any]) -> str:
    """The settings of `config` that differ from `other`'s (`unset` where it has none)."""
    keys = sorted(k for k in config.keys() | other.keys() if config.get(k) != other.get(k))
    return ", ".join(f"{k}={config[k] if k in config else 'unset'}" for k in keys[:4])


def _which_side(reported: float, measured: float, direction: str) -> str:
    """Whether a misreported number overclaims or underclaims, in the subtask's direction
    (read as a percentage when it is nearer the measured percentage)."""
    scale = 100 if abs(reported - 100 * measured) < abs(reported - measured) else 1
    better = reported > measured * scale if direction == "maximize" else reported < measured * scale
    return "an overclaim" if better else "an underclaim"


def budget_left(state: RunState) -> str | None:
    """What budget the run still had, in words; None when a limit was (nearly) spent.

    Attempts remain while fewer were made than allowed; any other limit must be less than
    `NEARLY_SPENT` used."""
    fractions = used(state)
    limit = state.started.budget.attempts
    if limit is not None and len(state.attempts) >= limit:
        return None
    if any(f >= NEARLY_SPENT for name, f in fractions.items() if name != "attempts"):
        return None
    if limit is None:
        return "no attempts limit"
    return f"{limit - len(state.attempts)} of {limit} attempts"


def _best_attempt(run: DetectorView, state: RunState) -> UUID | None:
    numbers = [a.number for a in state.attempts if a.normalized is not None]
    events = {n: e for n in numbers if (e := run.scored_attempt(n)) is not None}
    top = best_scored(e.payload.model_dump(mode="json") for e in events.values())
    return None if top is None else events[top["attempt"]].id


def _what(tool: str) -> str:
    return "submitted a paper" if tool == "submit_paper" else "finished the run"
