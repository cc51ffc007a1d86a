"""A run's state, folded from its stream: what a policy decides on and budgets are checked on."""

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from events import Event
from events.payloads import (
    ExperimentScored,
    PapersRetrieved,
    PaperSubmitted,
    RunFinished,
    RunStarted,
    ToolInvoked,
    ToolReturned,
)


@dataclass
class Attempt:
    """One call of `evaluate`: the configuration it ran and what the grader said."""

    number: int
    config: dict[str, Any]
    scores: dict[str, float] | None = None
    normalized: float | None = None


@dataclass
class RunState:
    """Everything about a run that its events say."""

    stream: str
    version: int
    started: RunStarted
    started_at: datetime
    last_at: datetime
    campaign: str | None
    finished: RunFinished | None = None
    steps: int = 0
    attempts: list[Attempt] = field(default_factory=list)
    papers: list[PaperSubmitted] = field(default_factory=list)
    retrieved: list[str] = field(default_factory=list)
    """Paper ids shown to the lab since its last paper, in order."""
    retrieved_ever: list[str] = field(default_factory=list)
    searched_at: int = -1
    """How many attempts the lab had made when it last searched the archive (-1: never)."""
    config: dict[str, Any] = field(default_factory=dict)
    """The last config.json the lab wrote."""
    pending_tool: str | None = None
    """The tool of the last step, when a step is followed by another of the same plan."""
    last_output: str = ""
    _attempts_at_last_paper: int = 0

    @property
    def lab(self) -> str:
        return self.started.lab

    @property
    def task(self) -> str:
        return self.started.task

    def attempts_since_paper(self) -> list[Attempt]:
        """Attempts made after the last submitted paper."""
        return self.attempts[self._attempts_at_last_paper :]


def fold(events: list[Event]) -> RunState:
    """The state of the run whose whole stream is `events` (version order)."""
    first = events[0]
    if not isinstance(first.payload, RunStarted):
        raise ValueError(f"{first.stream} does not begin with run.started")
    state = RunState(
        stream=first.stream,
        version=first.version,
        started=first.payload,
        started_at=first.occurred_at,
        last_at=first.occurred_at,
        campaign=first.correlation_id,
    )
    for event in events[1:]:
        _apply(state, event)
    return state


def _apply(state: RunState, event: Event) -> None:
    state.version = event.version
    state.last_at = event.occurred_at
    payload = event.payload
    if isinstance(payload, ToolInvoked):
        state.steps += 1
        state.pending_tool = payload.tool
        if payload.tool == "write_file" and payload.args.get("path") == "config.json":
            state.config = _parse(payload.args.get("content"))
        if payload.tool == "search_archive":
            state.searched_at = len(state.attempts)
        if payload.tool == "evaluate":
            state.attempts.append(Attempt(number=len(state.attempts) + 1, config=state.config))
    elif isinstance(payload, ToolReturned):
        state.last_output = payload.preview
    elif isinstance(payload, ExperimentScored) and state.attempts:
        attempt = state.attempts[payload.attempt - 1]
        attempt.scores = payload.subtask_scores
        attempt.normalized = payload.normalized_score
    elif isinstance(payload, PapersRetrieved):
        state.retrieved.extend(payload.paper_ids)
        state.retrieved_ever.extend(payload.paper_ids)
    elif isinstance(payload, PaperSubmitted):
        state.papers.append(payload)
        state.retrieved = []
        state._attempts_at_last_paper = len(state.attempts)
    elif isinstance(payload, RunFinished):
        state.finished = payload


def _parse(content: Any) -> dict[str, Any]:
    try:
        value = json.loads(content) if isinstance(content, str) else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
