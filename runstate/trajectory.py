"""A run's trajectory: its events cut into the lab's steps, each with the run's state
after it, through the same fold the lab steps use (`runstate.apply`).

A step is what one lab step published: its events share the `causation_id` (the last
event the step had seen, `workers/lab/step.py`), so consecutive events with the same
causation are one step. Step 0 is the run's `run.started`.
"""

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from events.payloads import (
    ExperimentScored,
    ModelCalled,
    RunStarted,
    ToolInvoked,
    ToolReturned,
)
from events.payloads.model import Phase
from events.recorded import Fact
from events.spend import NOTHING, Spend, spend_of_payload
from runstate.agent_notes import note_of
from runstate.best import NORMALIZED, best_of
from runstate.budget import wall_seconds
from runstate.fold import fold_from, start
from runstate.fork import Load, rebase
from runstate.state import RunState

PREVIEW_CHARS = 120
"""Characters of a tool's arguments or result shown per action."""


@dataclass(frozen=True)
class Action:
    """One tool call of a step: what was asked and what came back."""

    tool: str
    args: str
    """The arguments, as compact text cut to `PREVIEW_CHARS`."""
    exit_code: int | None = None
    """None while the call has no recorded result."""
    result: str = ""
    duration_s: float | None = None
    limit: str | None = None
    reported: bool = False
    """An agent's own tool ran it, seen in its model traffic (`ToolInvoked.reported`);
    labrxiv ran the others."""


@dataclass(frozen=True)
class Step:
    """One lab step of a run."""

    number: int
    stream: str
    """The stream the step's events are in (a fork's parent's, for an inherited step)."""
    first_version: int
    last_version: int
    first_position: int | None
    last_position: int | None
    at: datetime
    elapsed_s: float
    """The run's wall time used at the step's first event (`runstate.budget.wall_seconds`:
    the time it stood stopped left out)."""
    phase: Phase | None
    """The research phase the run was in after the step (`llm` runs)."""
    types: tuple[str, ...]
    events: tuple[UUID, ...]
    actions: tuple[Action, ...]
    notes: tuple[str, ...]
    """What the step's agent events say, a line each (`runstate.agent_notes`)."""
    model_calls: int
    spend: Spend
    """What the step's model calls and gradings spent."""
    total: Spend
    """What the run had spent after the step."""
    scored: tuple[float | None, ...]
    """Normalized scores of the attempts scored in the step."""
    best: float | None
    """The run's best normalized score after the step."""


def steps(events: Iterable[Fact], load: Load | None = None) -> Iterator[tuple[Step, RunState]]:
    """Each step of the run whose stream is `events` (version order), with the state
    after it. For a fork, given `load` (a stream's events up to a version), the
    parent's steps up to the fork point come first (their `stream` is the parent's),
    then the fork's start and its own steps, numbered on."""
    for number, group, state in groups(events, load):
        yield _step(number, group, state), state


def begins_step(cause: UUID | None, causation: UUID | None, kind: str) -> bool:
    """Whether an event (its `causation` id and type `kind`) begins a new step after one
    whose events were caused by `cause`: a step's events share their cause. A stop
    (`run.interrupted`) is written by the stopped process, not by a step: it closes the
    step it follows instead of being a step of its own."""
    return causation != cause and kind != "run.interrupted"


def groups(
    events: Iterable[Fact], load: Load | None = None
) -> Iterator[tuple[int, list[Fact], RunState]]:
    """What `steps` gives, as each step's number and events with the state after it,
    without describing the step (the failure-mode detectors need only the events)."""
    iterator = iter(events)
    first = next(iterator, None)
    if first is None:
        return
    point = first.payload.forked_from if isinstance(first.payload, RunStarted) else None
    if point is not None and load is not None:
        parent: RunState | None = None
        number = 0
        for inherited, theirs, parent in groups(load(point.run, point.version), load):
            number = inherited + 1
            yield inherited, theirs, parent
        if parent is None:
            raise ValueError(f"{first.stream} forks {point.run}, which has no event")
        state = rebase(parent, first)
    else:
        state, number = start(first), 0
    yield number, [first], state
    number += 1
    group: list[Fact] = []
    for event in iterator:
        if group and begins_step(group[-1].causation_id, event.causation_id, event.payload.type):
            state = fold_from(state, group)
            yield number, group, state
            number += 1
            group = []
        group.append(event)
    if group:
        state = fold_from(state, group)
        yield number, group, state


def state_at(
    events: Iterable[Fact],
    step: int | None = None,
    position: int | None = None,
    load: Load | None = None,
) -> tuple[list[Step], RunState]:
    """The steps up to `step` (or up to the last event at or before log `position`) and
    the state after them; the whole run when neither is given (`load`: as `steps`)."""
    taken: list[Step] = []
    state: RunState | None = None
    for item, after in steps(events, load):
        if step is not None and item.number > step:
            break
        if position is not None and (item.last_position or 0) > position:
            break
        taken.append(item)
        state = after
    if state is None:
        raise ValueError("the run has no event at that point")
    return taken, state


def _step(number: int, group: list[Fact], state: RunState) -> Step:
    actions: dict[str, Action] = {}
    spend = NOTHING
    scored: list[float | None] = []
    calls = 0
    notes: list[str] = []
    for event in group:
        payload = event.payload
        if isinstance(payload, ToolInvoked):
            actions[payload.call_id] = Action(
                payload.tool, _text(payload.args), reported=payload.reported
            )
        elif isinstance(payload, ToolReturned):
            asked = actions.get(
                payload.call_id, Action(payload.tool, "", reported=payload.reported)
            )
            actions[payload.call_id] = Action(
                asked.tool,
                asked.args,
                payload.exit_code,
                _text(payload.preview),
                payload.duration_s,
                payload.limit,
                asked.reported,
            )
        elif isinstance(payload, ModelCalled):
            calls += 1
        elif isinstance(payload, ExperimentScored):
            scored.append(payload.normalized_score)
        note = note_of(payload)
        if note is not None:
            notes.append(note)
        spent = spend_of_payload(payload)
        if spent is not None:
            spend = spend + spent
    normalized = [a.normalized for a in state.attempts if a.normalized is not None]
    return Step(
        number=number,
        stream=group[0].stream,
        first_version=group[0].version,
        last_version=group[-1].version,
        first_position=group[0].position,
        last_position=group[-1].position,
        at=group[0].occurred_at,
        elapsed_s=wall_seconds(
            state.started_at, state.stopped_s, state.stopped_at, group[0].occurred_at
        ),
        phase=state.phase,
        types=tuple(e.type for e in group),
        events=tuple(e.id for e in group),
        actions=tuple(actions.values()),
        notes=tuple(notes),
        model_calls=calls,
        spend=spend,
        total=state.spend,
        scored=tuple(scored),
        best=best_of(NORMALIZED, normalized),
    )


def _text(value: Any) -> str:
    """Compact one-line text of a value, cut to `PREVIEW_CHARS`."""
    text = value if isinstance(value, str) else repr(value)
    text = " ".join(text.split())
    return text if len(text) <= PREVIEW_CHARS else text[: PREVIEW_CHARS - 1] + "…"
