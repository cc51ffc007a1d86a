"""Normalized scores, as ResearchGym reports them: against the reference (SOTA) and the baseline."""

from runstate import best
from workers.gym.card import Subtask


def normalized(subtask: Subtask, score: float) -> float:
    """Score as a fraction of the reference, clipped to [0, 1].

    Maximize: (score − 0) / (SOTA − 0). Minimize (e.g. forgetting, where 0 is best):
    the fraction of the gap from the baseline to the reference that was closed.
    """
    if subtask.direction == "maximize":
        value = score / subtask.sota if subtask.sota else 0.0
    else:
        gap = subtask.baseline - subtask.sota
        value = (subtask.baseline - score) / gap if gap else 0.0
    return min(1.0, max(0.0, value))


def over_baseline(subtask: Subtask, score: float) -> float:
    """How much of the baseline→reference gap the score closes (unclipped; 0 = baseline)."""
    gap = subtask.sota - subtask.baseline
    return (score - subtask.baseline) / gap if gap else 0.0


def better(subtask: Subtask, a: float, b: float) -> bool:
    """Whether raw score `a` is better than raw score `b` on `subtask` (`runstate.best`)."""
    return best.better(subtask.direction, a, b)


PROGRESS = 0.02
"""The smallest gain, as a fraction of the baseline→reference gap, that counts as progress
(a smaller one is noise on a plateau)."""
