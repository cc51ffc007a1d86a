"""Experiment events: scores produced by a task's trusted grader, never by the agent."""

from typing import Literal

from pydantic import Field

from events.payloads.base import Payload
from events.payloads.model import Price

Direction = Literal["maximize", "minimize"]
"""Which way a subtask's metric is better."""


class ExperimentScored(Payload):
    """The grader scored an attempt of the run."""

    type: Literal["experiment.scored"] = "experiment.scored"
    attempt: int = Field(ge=1)
    """1 for the run's first scored attempt, then 2, 3…"""
    subtask_scores: dict[str, float]
    """Raw metric value per subtask, as the grader reported it."""
    score: float
    """The task's primary score for this attempt."""
    directions: dict[str, Direction] = {}
    """Which way each subtask's score is better, as the task card said when the attempt
    was scored: the log ranks scores without the card. Empty in events written before it
    was recorded."""
    normalized_score: float | None = None
    """The primary score normalized in its subtask's direction (docs/tasks.md,
    "Normalized scores": score / SOTA when maximized, (baseline − score) / (baseline −
    SOTA) when minimized), clipped to [0, 1]; None when the task has no SOTA."""
    baseline_normalized: float | None = None
    """The task's baseline score for the primary subtask, normalized as `normalized_score`
    is: what "below the baseline" means for this attempt. None in events written before
    it was recorded."""
    grader: str = "grader"
    """Which trusted grader produced the scores."""
    grader_usage: dict[str, int] | None = None
    """Model usage of the grading itself (calls, input_tokens, cached_input_tokens,
    output_tokens, without_usage: answers that reported none), when the grader calls a
    model (e.g. math-prompting); None for graders that use none."""
    grader_model: str | None = None
    """The model the grader called, as it reported it."""
    grader_price: Price | None = None
    """The price of `grader_model` when the attempt was scored; None when unknown."""
    grader_cost_usd: float | None = None
    """The grading's cost at `grader_price`; None when unknown (no price, or answers
    without usage), never a silent 0."""
