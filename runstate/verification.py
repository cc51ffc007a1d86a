"""Which numbers of a paper the log verifies: the archive's `verified` and `measured` marks.

A claim is verified when the author's run, before the paper, has the graded attempt the
claim names (`experiment.scored`, written by the environment) and that attempt measured
the number claimed (`runstate.claims.states`: the measurement as shown, rounded, or as a
percentage). A reported experiment is verified when its attempt ran the configuration
reported (as the run's `config.json` writes say) and measured every score reported.
`measured` is what the grader measured (a claim's value, an experiment's scores), None
unless verified; a claim's `graded` is what its attempt measured, verified or not.

The labs' lag-free archive (`workers.lab.archive_log`) marks papers read from the store,
the archive read model (`projections.archive`) marks them read on its connection: both
ask this module, so a lab and a person see the same marks, and the `misreported_claim`
detector finds what they leave unmarked. A paper's marks depend only
on its author's events before it (and, for a fork, its parent's up to the fork point),
which precede it in the log and never change.
"""

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from events.recorded import Fact
from runstate.claims import states
from runstate.fork import Load, fold_standing
from runstate.state import Attempt, RunState

Graded = Mapping[int, Attempt]
"""A run's graded attempts by number."""


class Scored(Protocol):
    """A graded attempt as a claim is checked against it: the grader's scores."""

    @property
    def scores(self) -> Mapping[str, float] | None: ...


Named = Mapping[int, Scored]
"""Graded attempts by number, as a claim names them (a run's `Graded`, or a reviewer's
evidence)."""


def standing(before: Sequence[Fact], load: Load) -> RunState | None:
    """The state of the run whose events before a paper are `before` (version 0 on; a
    fork's on the trajectory it stands on); None when `before` is not a run's stream."""
    if not before:
        return None
    try:
        return fold_standing(before, load)
    except ValueError:  # not a run stream, or a fork whose parent the log lacks
        return None


def graded_of(state: RunState | None) -> Graded:
    """The graded attempts of a run in `state` (a fork's go on from its parent's: it is
    judged on both); none for no run."""
    if state is None:
        return {}
    return {a.number: a for a in state.attempts if a.scores is not None}


def graded_before(run: str, version: int, load: Load) -> Graded:
    """The graded attempts of `run` before its event `version` (a paper's)."""
    return graded_of(standing(load(run, version - 1) if version > 0 else [], load))


def measured(claim: Mapping[str, Any], graded: Named) -> float | None:
    """What the graded attempt `claim` names measured, when the claim states it."""
    value = graded_value(claim, graded)
    return value if states(claim.get("value"), value) else None


def graded_value(claim: Mapping[str, Any], graded: Named) -> float | None:
    """What the graded attempt `claim` names measured of the claim's subtask, whether the
    claim states it or not (an overclaim is shown beside what was measured); None when
    the run has no such graded attempt or score."""
    attempt = graded.get(claim.get("attempt") or 0)
    if attempt is None or attempt.scores is None:
        return None
    return attempt.scores.get(claim["subtask"])


def checked_claims(claims: Sequence[Mapping[str, Any]], graded: Graded) -> list[dict[str, Any]]:
    """`claims` with `verified`, `measured` and `graded` (`graded_value`) set on each."""
    checked = []
    for claim in claims:
        value = measured(claim, graded)
        shown = graded_value(claim, graded)
        checked.append({**claim, "verified": value is not None, "measured": value, "graded": shown})
    return checked


def checked_experiments(
    experiments: Sequence[Mapping[str, Any]], graded: Graded
) -> list[dict[str, Any]]:
    """`experiments` with `verified` and `measured` (the attempt's scores) set on each."""
    checked = []
    for experiment in experiments:
        attempt = graded.get(experiment.get("attempt") or 0)
        verified = _reproduces(experiment, attempt)
        scores = dict(attempt.scores or {}) if verified and attempt is not None else None
        checked.append({**experiment, "verified": verified, "measured": scores})
    return checked


def _reproduces(experiment: Mapping[str, Any], attempt: Attempt | None) -> bool:
    """Whether the attempt ran the reported configuration and got every reported score."""
    if attempt is None or attempt.scores is None or experiment.get("config") != attempt.config:
        return False
    scores = experiment.get("scores") or {}
    return bool(scores) and all(states(v, attempt.scores.get(k)) for k, v in scores.items())
