"""Which score is better, and the best so far: the one rule the read models, the analysis,
the search policy and the campaign report rank scores by.

A raw score is better in its subtask's direction (higher when maximized, lower when
minimized). A normalized score is direction-aware already (docs/tasks.md, "Normalized
scores": 1 at the reference, 0 at or below the baseline, in either direction), so higher
is always better. A scored attempt is ranked by its normalized score when it has one,
else by its raw primary score in the direction its event recorded; two attempts whose
normalized scores tie (both clipped at 1 past the reference, or at 0) are told apart by
their raw scores in the metric's direction.
"""

from collections.abc import Iterable, Mapping
from typing import Any

from events.payloads.experiment import Direction

NORMALIZED: Direction = "maximize"
"""The direction of every normalized score, whatever its metric's."""


def better(direction: Direction, a: float, b: float) -> bool:
    """Whether score `a` is better than score `b` in `direction`."""
    return a > b if direction == "maximize" else a < b


def improves(direction: Direction, score: float, best: float | None) -> bool:
    """Whether `score` is a new best so far over `best` (None: nothing scored yet)."""
    return best is None or better(direction, score, best)


def best_of(direction: Direction, scores: Iterable[float]) -> float | None:
    """The best of `scores` in `direction`; None when there are none."""
    best: float | None = None
    for score in scores:
        if improves(direction, score, best):
            best = score
    return best


def best_ranked(scores: Iterable[tuple[float, Direction]]) -> tuple[float, Direction] | None:
    """The best of `scores`, each ranked in the direction beside it (a run's best and
    its direction, say), with its direction; None when there are none. Scores of one
    task share a direction; were they to differ, each is compared in its own, as a
    run's read model folds its attempts."""
    best: tuple[float, Direction] | None = None
    for score, way in scores:
        if improves(way, score, None if best is None else best[0]):
            best = (score, way)
    return best


def first_key(direction: Direction, score: float) -> float:
    """A sort key that puts better scores in `direction` first."""
    return -score if direction == "maximize" else score


def ranked(scored: Mapping[str, Any]) -> tuple[float, Direction]:
    """What an `experiment.scored` (its payload as a dict) is ranked by, and which way:
    its normalized score, else its raw primary score in that subtask's direction."""
    normalized = scored.get("normalized_score")
    if normalized is not None:
        return float(normalized), NORMALIZED
    return float(scored["score"]), primary_direction(scored)


def primary_direction(scored: Mapping[str, Any]) -> Direction:
    """The direction of an `experiment.scored`'s primary score as the event recorded it:
    that of the subtask whose score it is (maximize for an event that recorded none, or
    when subtasks of both directions have that score)."""
    scores = scored.get("subtask_scores") or {}
    ways = {
        way
        for name, way in (scored.get("directions") or {}).items()
        if scores.get(name) == scored["score"]
    }
    return ways.pop() if len(ways) == 1 else NORMALIZED


def outranks(scored: Mapping[str, Any], best: tuple[float, float] | None) -> bool:
    """Whether the attempt `scored` (an `experiment.scored` payload as a dict) is a new
    best over `best`, the (`ranked` score, raw score) of the best so far (None: none yet):
    by `ranked`, and between equal normalized scores by the raw primary score in its
    direction (of attempts all past the reference, the best raw one)."""
    score, way = ranked(scored)
    if best is None:
        return True
    if score != best[0] or scored.get("normalized_score") is None:
        return better(way, score, best[0])
    return better(primary_direction(scored), float(scored["score"]), best[1])


def best_scored(scored: Iterable[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The best of `experiment.scored` payloads (as dicts) by `outranks`, the first of
    equals; None when there are none."""
    best: Mapping[str, Any] | None = None
    held: tuple[float, float] | None = None
    for payload in scored:
        if outranks(payload, held):
            best, held = payload, (ranked(payload)[0], float(payload["score"]))
    return best
