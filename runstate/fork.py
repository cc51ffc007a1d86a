"""A fork's state: its parent's state at the fork point, with the fork's own start.

A fork (`labrxiv fork`) is a run whose `run.started` names a parent run and the last of
its events the fork inherits (`ForkPoint`). Its stream holds only its own events; its
state begins as the parent's after that event (attempts, papers, the conversation, the
model calls and spend, the phase), so no model or tool call is made again, and then
takes the fork's settings (policy, model, budget) from its `run.started`.
"""

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Protocol

from events.payloads import ForkPoint, RunStarted
from events.recorded import Fact
from runstate.fold import fold_from, start
from runstate.state import RunState

Load = Callable[[str, int], Sequence[Fact]]
"""A stream's events from version 0 up to and including a version."""


class Streams(Protocol):
    """What `loader` reads: an `events.EventStore`."""

    def read_stream(
        self, stream: str, after_version: int = -1, limit: int | None = None
    ) -> Sequence[Fact]: ...


def loader(store: Streams) -> Load:
    """A fork's parent's events up to the fork point, read from `store`."""
    return lambda stream, version: store.read_stream(stream, limit=version + 1)


def inherited(first: Fact, load: Load) -> list[Fact]:
    """The events a run stands on before its own, whose first event is `first`: none for
    a run; for a fork, its parent's up to the fork point (after theirs, for a fork of a
    fork). A log whose forks go round in a circle (only a forged one can) ends the walk
    at the first run seen again."""
    chain: list[list[Fact]] = []
    seen = {first.stream}
    point = _fork_point(first)
    while point is not None and point.run not in seen:
        seen.add(point.run)
        events = list(load(point.run, point.version))
        chain.append(events)
        point = _fork_point(events[0]) if events else None
    return [event for events in reversed(chain) for event in events]


def _fork_point(first: Fact) -> ForkPoint | None:
    return first.payload.forked_from if isinstance(first.payload, RunStarted) else None


def fold_standing(events: Sequence[Fact], load: Load) -> RunState:
    """The state of the run whose whole stream is `events`: a fork's on the trajectory
    it stands on (its parent's state at the fork point, then its own events)."""
    if not events:
        raise ValueError("an empty stream has no run state")
    return fold_from(begin(events[0], load), events[1:])


def begin(first: Fact, load: Load) -> RunState:
    """The state of a run whose first event is `first`: `start` for a run, its parent's
    state at the fork point rebased onto `first` for a fork (a fork of a fork too)."""
    payload = first.payload
    point = payload.forked_from if isinstance(payload, RunStarted) else None
    if point is None:
        return start(first)
    inherited = load(point.run, point.version)
    if len(inherited) != point.version + 1:
        raise ValueError(
            f"{first.stream} forks {point.run} at version {point.version}, "
            f"but the log holds {len(inherited)} events of it"
        )
    parent = fold_from(begin(inherited[0], load), inherited[1:])
    return rebase(parent, first)


def rebase(parent: RunState, started: Fact) -> RunState:
    """The fork whose `run.started` is `started`, from its parent's state at the fork
    point. The elapsed time goes on from the parent's (a wall-time budget counts the
    whole trajectory, as the other budgets do), less the time the parent stood stopped
    (its `stopped_s`; a parent stopped at the fork point is not: the fork runs from its
    start); the last payload is the fork's start,
    so a policy begins a new decision with the fork's settings instead of finishing
    the parent's pending one (an `llm` parent's next call, written ahead for its model)."""
    if not isinstance(started.payload, RunStarted):
        raise ValueError(f"{started.stream} does not begin with run.started")
    elapsed = parent.last_at - parent.started_at
    return replace(
        parent,
        stream=started.stream,
        version=started.version,
        started=started.payload,
        started_at=started.occurred_at - elapsed,
        last_at=started.occurred_at,
        stopped_at=None,
        campaign=started.correlation_id,
        last=started.payload,
        last_id=started.id,
        last_made_at=started.occurred_at,
        finished=None,
    )
