"""What the log says about a paper, for a reviewer that checks it: the author's graded
attempts before it, the task's baseline, the best paper already in the archive, and the
integrity violations of the run that wrote it."""

from dataclasses import dataclass
from uuid import UUID

from events import Event, EventStore
from events.payloads import ExperimentScored, IntegrityViolation, PaperSubmitted, RunStarted
from runstate import inherited, loader
from runstate.best import NORMALIZED, best_of, improves
from runstate.verification import graded_of, standing


@dataclass(frozen=True)
class Graded:
    """One of the author's attempts as the trusted grader scored it."""

    number: int
    scores: dict[str, float]
    normalized: float | None
    event: UUID
    """The `experiment.scored` event."""


@dataclass(frozen=True)
class Evidence:
    """A paper and what the log holds to check it against."""

    paper: PaperSubmitted
    event: Event
    """The paper's `paper.submitted`."""
    graded: dict[int, Graded]
    """The author run's attempts graded before the paper, by number, as the archive
    verifies claims against them (`runstate.verification`: a fork's include those it
    inherited, its attempts are numbered on from them)."""
    baseline: float | None
    """The task's normalized baseline as the grader last recorded it (None: unknown)."""
    prior_best: float | None
    """The best measured score of an earlier paper on the task in the same archive (the
    campaign's), when this one was submitted; None: it is the first."""
    prior_paper: str | None
    violations: tuple[UUID, ...]
    """`integrity.violation` events of the author's run before the paper (a fork's
    include those of the trajectory it stands on: its results rest on them too)."""


def gather(store: EventStore, run: list[Event], version: int) -> Evidence:
    """The evidence on the paper at `version` of the run whose events are `run`."""
    event = run[version]
    paper = event.payload
    if not isinstance(paper, PaperSubmitted):
        raise ValueError(f"{event.stream} v{version} is a {event.type}, not a paper.submitted")
    load = loader(store)
    scored_by: dict[int, UUID] = {}
    baseline = None
    violations = []
    # A fork's trajectory begins with its parent's up to the fork point: the grades and
    # violations there are the fork's too, and its papers name those attempts.
    for earlier in [*inherited(run[0], load), *run[:version]]:
        payload = earlier.payload
        if isinstance(payload, ExperimentScored):
            scored_by[payload.attempt] = earlier.id
            baseline = (
                payload.baseline_normalized if payload.baseline_normalized is not None else baseline
            )
        elif isinstance(payload, IntegrityViolation):
            violations.append(earlier.id)
    graded = {
        number: Graded(number, dict(attempt.scores or {}), attempt.normalized, scored_by[number])
        for number, attempt in graded_of(standing(run[:version], load)).items()
    }
    prior_best, prior_paper = _prior_best(store, event, paper)
    return Evidence(paper, event, graded, baseline, prior_best, prior_paper, tuple(violations))


def measured_score(paper: PaperSubmitted, graded: dict[int, Graded]) -> float | None:
    """A paper's measured score: the best normalized score the grader gave an attempt
    the paper's claims name, whatever value the paper wrote for it (None: no claim names
    a graded attempt)."""
    scores = [
        score
        for c in paper.claims
        if c.attempt in graded and (score := graded[c.attempt].normalized) is not None
    ]
    return best_of(NORMALIZED, scores)


def _prior_best(
    store: EventStore, event: Event, paper: PaperSubmitted
) -> tuple[float | None, str | None]:
    """The best measured score among the papers on the same task recorded before `event`
    in its campaign (the archive its labs read), and which paper it was."""
    if event.correlation_id is None or event.position is None:
        return None, None
    graded: dict[str, dict[int, Graded]] = {}
    load = loader(store)
    best: tuple[float | None, str | None] = (None, None)
    # Each run's `run.started` comes first in the campaign: a fork's names the attempts it
    # stands on, graded in its parent (its papers may claim them).
    types = ["run.started", "experiment.scored", "paper.submitted"]
    for record in store.iter_records(types=types, correlation=event.correlation_id):
        if record.position >= event.position:
            break
        typed = record.typed()
        payload = typed.payload
        if isinstance(payload, RunStarted):
            graded[record.stream] = {
                e.payload.attempt: _graded(e.payload, e.id)
                for e in inherited(typed, load)
                if isinstance(e.payload, ExperimentScored)
            }
        elif isinstance(payload, ExperimentScored):
            graded.setdefault(record.stream, {})[payload.attempt] = _graded(payload, typed.id)
        elif isinstance(payload, PaperSubmitted) and payload.task == paper.task:
            score = measured_score(payload, graded.get(record.stream, {}))
            if score is not None and improves(NORMALIZED, score, best[0]):
                best = (score, payload.paper_id)
    return best


def _graded(payload: ExperimentScored, event: UUID) -> Graded:
    return Graded(payload.attempt, dict(payload.subtask_scores), payload.normalized_score, event)
