"""The policy interface: given a run's state, the next tool call."""

from dataclasses import dataclass, field
from typing import Any, Protocol

from runstate import RunState
from workers.gym.bundle import Bundle
from workers.tools.env import Archive


@dataclass(frozen=True)
class Action:
    """One tool call a policy asks for."""

    tool: str
    args: dict[str, Any] = field(default_factory=dict)


class Policy(Protocol):
    """Decides a run's next action. Must be deterministic for the same state (a step
    delivered twice must ask for the same call)."""

    name: str

    def decide(self, state: RunState, bundle: Bundle, archive: Archive) -> Action:
        """The next tool call of the run."""
