"""A failure-mode finding: what a detector saw, how bad it is, and the events that prove it."""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal
from uuid import UUID

from events import Event

Mode = Literal[
    "silent_failure",
    "overconfidence",
    "parallel_trouble",
    "cheating",
    "context_trouble",
    "impatience",
    "poor_management",
]
"""The failure modes ResearchGym names, as docs/analysis.md defines them."""

Severity = Literal["low", "medium", "high"]


@dataclass(frozen=True)
class Finding:
    """One failure a detector found in a run."""

    mode: Mode
    detector: str
    """The detector's name (several detectors may find one mode)."""
    severity: Severity
    summary: str
    """One sentence a person reads: what happened, with the numbers."""
    events: tuple[UUID, ...]
    """The ids of the events that prove it (at least one)."""


Detector = Callable[[list[Event]], list[Finding]]
"""A pure function of a run's events (version order) to its findings."""
