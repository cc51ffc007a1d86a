"""Integrity and budget events: things a run must not do, and limits it reached."""

from typing import Literal

from events.payloads.base import Payload

ViolationKind = Literal[
    "path_traversal",
    "absolute_path",
    "symlink_escape",
    "protected_path",
    "network",
    "tampered_grader",
    "self_reported_score",
    "addresses_reviewer",
]


class IntegrityViolation(Payload):
    """A run tried something that would break the experiment's integrity; it was refused."""

    type: Literal["integrity.violation"] = "integrity.violation"
    kind: ViolationKind
    """What was tried."""
    detail: str
    """What exactly, in words."""
    tool: str | None = None
    """The tool the attempt came through."""
    call_id: str | None = None
    """The tool call, when there is one."""
    path: str | None = None
    """The path involved, as the lab gave it."""


BudgetName = Literal["attempts", "wall_seconds", "tokens", "dollars", "steps"]
"""The limits a run can reach."""


class BudgetExceeded(Payload):
    """A run reached one of its limits; its run ends with reason `budget`."""

    type: Literal["budget.exceeded"] = "budget.exceeded"
    budget: BudgetName
    """Which limit."""
    limit: float
    """The limit's value."""
    used: float
    """How much had been used when it was checked."""
