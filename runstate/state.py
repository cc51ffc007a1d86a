"""What a run's events say about it, as immutable values.

The state is a frozen dataclass whose growing parts are persistent collections
(`pyrsistent`): `apply` returns a new state that shares all but what changed with the
old one, so a step can fold its own unrecorded events onto the cached state without
copying the run's history, and the cached state stays valid for the next step.
"""

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID

from pyrsistent import pmap, pvector
from pyrsistent.typing import PMap, PVector

from events.payloads import (
    ModelCalled,
    ModelFailed,
    ModelResponded,
    PaperSubmitted,
    Payload,
    ReviewReceived,
    RunFinished,
    RunStarted,
    ToolReturned,
)
from events.payloads.model import Phase
from events.spend import NOTHING, Spend


@dataclass(frozen=True)
class Attempt:
    """One call of `evaluate`: the configuration it ran and what the grader said."""

    number: int
    config: dict[str, Any]
    """The last config.json the lab wrote before the call (never mutated)."""
    scores: dict[str, float] | None = None
    normalized: float | None = None


@dataclass(frozen=True)
class Exchange:
    """One group of an `llm` run's conversation: the instructions of a phase it entered,
    or one answer of the model with the results of the tools that answer called."""

    entered: Phase | None = None
    """The phase entered (an instructions group); None for an answer group."""
    note: str = ""
    """What the lab was told on entering, beyond the phase's instructions."""
    answer: ModelResponded | None = None
    phase: Phase | None = None
    """The phase the answer's call was made in."""
    results: tuple[ToolReturned, ...] = ()
    """Tool results recorded after the answer, in order."""


@dataclass(frozen=True)
class RunState:
    """Everything about a run that its events say, up to `version`."""

    stream: str
    version: int
    started: RunStarted
    started_at: datetime
    last_at: datetime
    campaign: str | None
    last: Payload
    """The payload of the last event folded that a step acts on (what an `llm` step acts
    on): a `run.interrupted` and a `run.resumed` leave it as it was, so the step that
    resumes the run takes up what the stop left."""
    last_id: UUID
    """The id of the last event folded (what a step's events are caused by)."""
    last_made_at: datetime
    """When `last` was recorded: a stop's events leave it as they leave `last` (the time
    of a failed model call, say, that the step resuming the run counts its wait from)."""
    finished: RunFinished | None = None
    stopped_s: float = 0.0
    """Seconds the run stood stopped: from each `run.interrupted` to its `run.resumed` (or
    next event; a fork's include those of the trajectory it stands on, before the fork
    point)."""
    stopped_at: datetime | None = None
    """When the run was stopped (`run.interrupted`), until its `run.resumed` or, in a log
    without one, its next event."""
    steps: int = 0
    """Tool calls made (`tool.invoked`)."""
    attempts: PVector[Attempt] = field(default_factory=pvector)
    papers: PVector[PaperSubmitted] = field(default_factory=pvector)
    retrieved: PVector[str] = field(default_factory=pvector)
    """Paper ids shown to the lab since its last paper, in order."""
    searched_at: int = -1
    """How many attempts the lab had made when it last searched the archive (-1: never)."""
    config: dict[str, Any] = field(default_factory=dict)
    """The last config.json the lab wrote (never mutated)."""
    pending_tool: str | None = None
    """The tool of the last tool call."""
    attempts_at_last_paper: int = 0
    # The model side (`llm` runs).
    phase: Phase | None = None
    calls_in_phase: int = 0
    """Logical requests (first attempts) made since the phase began."""
    calls: PMap[str, ModelCalled] = field(default_factory=pmap)
    """Every physical model call written ahead, by call id."""
    outcomes: PMap[str, ModelResponded | ModelFailed] = field(default_factory=pmap)
    phase_at_call: PMap[str, Phase | None] = field(default_factory=pmap)
    spend: Spend = NOTHING
    """What the run's model calls and model-using gradings spent (`events.spend`)."""
    exchanges: PVector[Exchange] = field(default_factory=pvector)
    """The conversation's groups, oldest first (`llm` runs)."""
    # Peer review (campaigns with `--review-rounds`).
    awaiting: str | None = None
    """The paper whose reviews the lab waits for (`review.awaited`), until received."""
    received: PVector[ReviewReceived] = field(default_factory=pvector)
    """The reviews the lab read, one entry per paper, in order."""

    @property
    def lab(self) -> str:
        return self.started.lab

    @property
    def task(self) -> str:
        return self.started.task

    def attempts_since_paper(self) -> PVector[Attempt]:
        """Attempts made after the last submitted paper."""
        return self.attempts[self.attempts_at_last_paper :]
