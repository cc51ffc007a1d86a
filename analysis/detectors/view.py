"""A run as the detectors read it: its tool calls paired and in order (its actions, as
`events.actions` counts them: an agent's reported calls included, none twice), what
each caused, its scored attempts, and the run's state after each step (`runstate.trajectory.steps`,
the fold the lab steps use), so "the best score at that moment" or "the attempts left
then" mean what the lab itself saw."""

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeVar, cast
from uuid import UUID

import orjson

from events.actions import is_action
from events.payloads import (
    ExperimentScored,
    IntegrityViolation,
    PaperSubmitted,
    RunFinished,
    RunStarted,
    ToolInvoked,
    ToolReturned,
    WorkspaceChanged,
)
from events.payloads.base import Payload
from events.recorded import EventLike, Fact
from runstate import RunState
from runstate.best import NORMALIZED, best_of
from runstate.budget import run_used
from runstate.fold import fold_from
from runstate.fork import Load
from runstate.trajectory import groups
from runstate.verification import Graded, graded_of

CAUSED = (ExperimentScored, IntegrityViolation, PaperSubmitted)
"""Payloads a tool call causes, recorded right after its `tool.returned`."""


@dataclass(frozen=True)
class Call:
    """One tool call: what was asked, what came back, and what it caused."""

    index: int
    """Its place among the run's tool calls (0, 1, 2…)."""
    step: int
    tool: str
    args: dict[str, Any]
    invoked: UUID
    """The id of its `tool.invoked`."""
    returned: UUID | None
    reported: bool
    """An agent's own tool ran it (`ToolInvoked.reported`): labrxiv only saw it."""
    result: ToolReturned | None
    """None when the run has no result for it (it ended mid-call)."""
    caused: tuple[Fact, ...]
    state: RunState
    """The run's state after the call's step."""
    text: str
    """What the call runs or names, as text: a command, code, a path, else its args."""
    action: str
    """The tool and its arguments as one key: equal for the same action."""
    written: dict[str, str | None]
    """Files the call wrote, path → sha256 (None: not hashed). Not to be changed: every
    detector reads the same one.

    The three are made with the call (every detector run reads them of nearly every
    call; a `cached_property` took a lock on each first read)."""

    before: tuple[WorkspaceChanged, ...] = ()
    """What an agent changed in its workspace since its previous call, seen by no call
    (`workspace.changed`: an agent whose own tools' calls labrxiv does not see)."""

    @property
    def changed_before(self) -> tuple[dict[str, str | None], tuple[str, ...]]:
        """The files `before` wrote (path → sha256, the latest) and deleted."""
        if not self.before:
            return _UNCHANGED
        written: dict[str, str | None] = {}
        deleted: list[str] = []
        for change in self.before:
            written |= {f.path: f.sha256 for f in change.files_written}
            deleted += change.files_deleted
        return written, tuple(deleted)

    @property
    def ids(self) -> tuple[UUID, ...]:
        """Its `tool.invoked` and, when there is one, its `tool.returned`."""
        return (self.invoked,) if self.returned is None else (self.invoked, self.returned)

    @property
    def ok(self) -> bool:
        return self.result is not None and self.result.exit_code == 0

    def scored(self) -> tuple[Fact, ExperimentScored] | None:
        """The `experiment.scored` the call caused (an evaluate that was graded)."""
        for event in self.caused:
            if isinstance(event.payload, ExperimentScored):
                return event, event.payload
        return None


_UNCHANGED: tuple[dict[str, str | None], tuple[str, ...]] = ({}, ())
"""`Call.changed_before` of a call with no unseen change before it (not to be changed)."""

_P = TypeVar("_P", bound=Payload)


@dataclass(frozen=True)
class DetectorView:
    """A run's events, read once for every detector."""

    events: Sequence[Fact]
    started: Fact
    calls: tuple[Call, ...]
    scored: tuple[Fact, ...]
    """Its `experiment.scored` events, in order."""
    finished: Fact | None
    final: RunState
    by_type: dict[type, tuple[Fact, ...]]
    """The trajectory's events by payload type, in order (`of`)."""
    graded: dict[UUID, Graded]
    """The run's graded attempts before each of its papers (by the `paper.submitted`'s
    id), as the archive verifies the paper's claims against them
    (`runstate.verification`)."""

    def of(self, payload: type[_P]) -> tuple[EventLike[_P], ...]:
        """The trajectory's events whose payload is of type `payload`, in order: what a
        detector that looks at one kind of event reads, without walking every event."""
        return cast("tuple[EventLike[_P], ...]", self.by_type.get(payload, ()))

    @property
    def start(self) -> RunStarted:
        assert isinstance(self.started.payload, RunStarted)
        return self.started.payload

    @property
    def end(self) -> RunFinished | None:
        return self.finished.payload if self.finished else None  # type: ignore[return-value]

    def baseline(self) -> float | None:
        """The normalized baseline the grader recorded (the latest attempt's); None when
        no attempt recorded one."""
        for event in reversed(self.scored):
            assert isinstance(event.payload, ExperimentScored)
            if event.payload.baseline_normalized is not None:
                return event.payload.baseline_normalized
        return None

    def scored_attempt(self, attempt: int, before: UUID | None = None) -> Fact | None:
        """The `experiment.scored` event that graded `attempt` (the latest, as the fold
        takes it), of those before the event `before` when given; None if none did."""
        found = None
        for event in self.scored if before is None else self.events:
            if event.id == before:
                break
            payload = event.payload
            if isinstance(payload, ExperimentScored) and payload.attempt == attempt:
                found = event
        return found


def best(state: RunState) -> float | None:
    """The best normalized score of the attempts `state` holds; None before any."""
    scores = [a.normalized for a in state.attempts if a.normalized is not None]
    return best_of(NORMALIZED, scores)


def used(state: RunState) -> dict[str, float]:
    """The fraction of each of the run's limits `state` has used, by limit name (only the
    limits the run has), counted as the lab counts them (`runstate.budget.run_used`), wall
    time to the run's last event."""
    limits = state.started.budget.model_dump()
    return {
        name: amount / limits[name]
        for name, amount in run_used(state, state.last_at).items()
        if limits.get(name)
    }


def read_run(events: Sequence[Fact], load: Load | None = None) -> DetectorView:
    """The run whose whole stream (so far) is `events`, in version order. A fork, given
    `load`, is read on its whole trajectory: its parent's events up to the fork point
    (what it stands on), then its own; its `run.started` (its own settings) is `started`."""
    if not events or not isinstance(events[0].payload, RunStarted):
        raise ValueError("a run's stream begins with run.started")
    parts: list[dict[str, Any]] = []
    by_call: dict[str, dict[str, Any]] = {}
    final: RunState | None = None
    trajectory: list[Fact] = []
    graded: dict[UUID, Graded] = {}
    unseen: list[WorkspaceChanged] = []
    for number, group, state in groups(events, load):
        trajectory.extend(group)
        last: dict[str, Any] | None = None
        for index, event in enumerate(group):
            payload = event.payload
            if isinstance(payload, PaperSubmitted) and final is not None:
                graded[event.id] = graded_of(fold_from(final, group[:index]))
            if isinstance(payload, ToolInvoked) and is_action(payload.tool, payload.reported):
                last = {"invoked": event, "returned": None, "caused": [], "step": number}
                last["state"], last["before"], unseen = state, tuple(unseen), []
                parts.append(last)
                by_call[payload.call_id] = last
            elif isinstance(payload, ToolReturned) and payload.call_id in by_call:
                last = by_call[payload.call_id]
                last["returned"] = event
            elif isinstance(payload, CAUSED) and last is not None:
                last["caused"].append(event)
            elif isinstance(payload, WorkspaceChanged):
                unseen.append(payload)
                last = None
            else:
                last = None
        final = state
    assert final is not None
    calls = tuple(_call(index, part) for index, part in enumerate(parts))
    by_type: dict[type, list[Fact]] = {}
    for event in trajectory:
        kind = type(event.payload)
        found = by_type.get(kind)
        if found is None:
            by_type[kind] = [event]
        else:
            found.append(event)
    scored = tuple(by_type.get(ExperimentScored, ()))
    finished = next((e for e in events if isinstance(e.payload, RunFinished)), None)
    typed = {kind: tuple(found) for kind, found in by_type.items()}
    return DetectorView(trajectory, events[0], calls, scored, finished, final, typed, graded)


def _call(index: int, parts: dict[str, Any]) -> Call:
    invoked: ToolInvoked = parts["invoked"].payload
    returned: Fact | None = parts["returned"]
    args = _dumped(invoked.args)
    result: ToolReturned | None = returned.payload if returned else None  # type: ignore[assignment]
    return Call(
        index=index,
        step=parts["step"],
        tool=invoked.tool,
        args=dict(invoked.args),
        invoked=parts["invoked"].id,
        returned=returned.id if returned else None,
        reported=invoked.reported,
        result=result,
        caused=tuple(parts["caused"]),
        state=parts["state"],
        text=_text(invoked.args, args),
        action=f"{invoked.tool} {args}",
        written={} if result is None else {f.path: f.sha256 for f in result.files_written},
        before=parts["before"],
    )


def _dumped(args: dict[str, Any]) -> str:
    """A call's arguments as canonical JSON text (sorted keys). An integer beyond 64 bits
    (valid JSON, which orjson does not write) goes through the standard library."""
    try:
        return orjson.dumps(args, option=orjson.OPT_SORT_KEYS).decode()
    except orjson.JSONEncodeError:
        return json.dumps(args, sort_keys=True, separators=(",", ":"))


def _text(args: dict[str, Any], dumped: str) -> str:
    """What a call runs or names: a command, code, a path, else its args (`dumped`)."""
    for key in ("command", "code", "path"):
        value = args.get(key)
        if isinstance(value, str):
            return value
    return dumped
