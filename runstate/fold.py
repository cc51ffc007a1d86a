"""The fold: `apply(state, event) -> state`, pure and incremental.

Folding a stream one event at a time, in pages of any size, or from a saved state plus
the rest gives the same state (tests/runstate/test_fold.py checks it as a property).
"""

import json
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import fields, replace
from datetime import datetime
from typing import Any, NamedTuple

from events import payloads as p
from events.recorded import Fact
from events.spend import spend_of_payload
from runstate.budget import stood_stopped
from runstate.state import Attempt, Exchange, RunState


def start(event: Fact) -> RunState:
    """The state of a run whose stream so far is its `run.started` event."""
    if not isinstance(event.payload, p.RunStarted):
        raise ValueError(f"{event.stream} does not begin with run.started")
    return RunState(
        stream=event.stream,
        started=event.payload,
        started_at=event.occurred_at,
        campaign=event.correlation_id,
        **_latest(event),
    )


def fold(events: Iterable[Fact]) -> RunState:
    """The state of the run whose whole stream is `events` (version order)."""
    iterator = iter(events)
    first = next(iterator, None)
    if first is None:
        raise ValueError("an empty stream has no run state")
    return fold_from(start(first), iterator)


def fold_from(state: RunState, events: Iterable[Fact]) -> RunState:
    """`state` with the events that follow it applied in order: what `apply` gives
    event by event, built as one new state. The first event's changes make a copy of
    `state`; each later event's are set on that copy, which nobody else sees until it is
    returned (a handler reads the state and makes new values; it never keeps the state).
    A copy an event cost ~1.5 µs, a third of the fold (bench/rebuild.py's findings)."""
    draft: RunState | None = None
    for event in events:
        if draft is None:
            draft = apply(state, event)
        else:
            draft.__dict__.update(_changes(draft, event))
    return state if draft is None else draft


def ahead(state: RunState, payloads: Sequence[p.Payload], at: datetime) -> RunState:
    """`state` once `payloads` follow it: what a step sees of its own events before they
    are recorded (they are folded exactly as the recorded events will be)."""
    for payload in payloads:
        event = _Unrecorded(
            _NO_ID, state.stream, state.version + 1, payload.type, at, state.campaign, payload
        )
        state = apply(state, event)
    return state


_NO_ID = uuid.UUID(int=0)


class _Unrecorded(NamedTuple):
    """A step's own event before it is recorded, as the fold reads it: a named tuple, not
    an `Event`, which `model_construct` builds in ~13 µs (a model call's step folds about
    three)."""

    id: uuid.UUID
    stream: str
    version: int
    type: str
    occurred_at: datetime
    correlation_id: str | None
    payload: p.Payload
    position: int | None = None
    causation_id: uuid.UUID | None = None
    actor: str | None = None


def apply(state: RunState, event: Fact) -> RunState:
    """The run's state after `event`, the event that follows `state.version`."""
    return _changed(state, _changes(state, event))


def _changes(state: RunState, event: Fact) -> dict[str, Any]:
    """The fields `event` changes in `state`, with their new values (checked: fields of
    `RunState`)."""
    if event.version != state.version + 1:
        raise ValueError(
            f"{state.stream}: event version {event.version} does not follow {state.version}"
        )
    changes = _latest(event)
    payload = event.payload
    if state.stopped_at is not None or isinstance(payload, p.RunInterrupted | p.RunResumed):
        changes |= _stop(state, event)
    if isinstance(payload, p.ToolInvoked):
        changes |= _invoked(state, payload)
    elif isinstance(payload, p.ToolReturned):
        changes |= _returned(state, payload)
    elif isinstance(payload, p.ExperimentScored):
        changes |= _scored(state, payload)
    elif isinstance(payload, p.PapersRetrieved):
        changes["retrieved"] = state.retrieved.extend(payload.paper_ids)
    elif isinstance(payload, p.PaperSubmitted):
        changes["papers"] = state.papers.append(payload)
        changes["retrieved"] = state.retrieved.delete(0, len(state.retrieved))
        changes["attempts_at_last_paper"] = len(state.attempts)
    elif isinstance(payload, p.RunFinished):
        changes["finished"] = payload
    elif isinstance(payload, p.PhaseEntered):
        changes["phase"], changes["calls_in_phase"] = payload.phase, 0
        exchange = Exchange(entered=payload.phase, note=payload.note)
        changes["exchanges"] = state.exchanges.append(exchange)
    elif isinstance(payload, p.ModelCalled):
        changes |= _called(state, payload)
    elif isinstance(payload, p.ModelResponded):
        changes |= _responded(state, payload)
    elif isinstance(payload, p.ModelFailed):
        changes["outcomes"] = state.outcomes.set(payload.call_id, payload)
    elif isinstance(payload, p.ReviewAwaited):
        changes["awaiting"] = payload.paper_id
    elif isinstance(payload, p.ReviewReceived):
        changes["received"] = state.received.append(payload)
        changes["awaiting"] = None
    if not changes.keys() <= _FIELDS:  # what `replace` would refuse
        raise TypeError(f"RunState has no field {sorted(changes.keys() - _FIELDS)}")
    return changes


def _latest(event: Fact) -> dict[str, Any]:
    """The fields every event sets, the first included: the version, and the event as the
    run's last (a stop's own event keeps the `last` before it, `_stop`)."""
    return {
        "version": event.version,
        "last_at": event.occurred_at,
        "last": event.payload,
        "last_id": event.id,
        "last_made_at": event.occurred_at,
    }


_FIELDS = frozenset(f.name for f in fields(RunState))


def _changed(state: RunState, changes: dict[str, Any]) -> RunState:
    """`state` with `changes`: `dataclasses.replace` without its `__init__` call.

    `replace` re-runs the dataclass's `__init__` over all 27 fields, a third of a fold
    (~3.5 µs of ~10 an event, `bench/rebuild.py`'s findings). `RunState` has no
    `__post_init__` and no derived fields, so copying its fields and setting the changed
    ones gives the same value; the state stays frozen to its users.
    """
    new = object.__new__(RunState)
    values = new.__dict__
    values.update(state.__dict__)
    values.update(changes)
    return new


def _stop(state: RunState, event: Fact) -> dict[str, Any]:
    """A `run.interrupted` stops the run's wall clock, and its `run.resumed` (in a log
    without one, its next event) starts it again (`runstate.budget.stood_stopped`).
    Neither is a step's to act on: `last` (and when it was made) stays what the step that
    resumes the run takes up."""
    stopped_s, stopped_at = stood_stopped(
        state.stopped_s, state.stopped_at, event.payload.type, event.occurred_at
    )
    changes: dict[str, Any] = {"stopped_s": stopped_s, "stopped_at": stopped_at}
    if isinstance(event.payload, p.RunInterrupted | p.RunResumed):
        changes |= {"last": state.last, "last_made_at": state.last_made_at}
    return changes


def _invoked(state: RunState, payload: p.ToolInvoked) -> dict[str, Any]:
    """A tool call: a step (an attempt, for `evaluate`). A call an agent reports (its own
    tool ran it, `reported`) is the record of what it did, not a step of the lab's: the
    lab's steps and attempts are the calls labrxiv ran (an agent's lab-API calls)."""
    if payload.reported:
        return {}
    changes: dict[str, Any] = {"steps": state.steps + 1, "pending_tool": payload.tool}
    if payload.tool == "write_file" and payload.args.get("path") == "config.json":
        changes["config"] = _parse(payload.args.get("content"))
    if payload.tool == "search_archive":
        changes["searched_at"] = len(state.attempts)
    if payload.tool == "evaluate":
        config = changes.get("config", state.config)
        attempt = Attempt(number=len(state.attempts) + 1, config=config)
        changes["attempts"] = state.attempts.append(attempt)
    return changes


def _returned(state: RunState, payload: p.ToolReturned) -> dict[str, Any]:
    """A tool's result joins the latest answer's group (the tools that answer called).

    An `evaluate` that was refused before it ran is no attempt: the one its invocation
    opened is dropped (it neither counts against the budget nor shifts the numbering)."""
    changes: dict[str, Any] = {}
    if payload.tool == "evaluate" and not payload.ran and state.attempts:
        if state.attempts[-1].scores is None:
            changes["attempts"] = state.attempts.delete(len(state.attempts) - 1)
    if not state.exchanges or state.exchanges[-1].answer is None:
        return changes
    group = state.exchanges[-1]
    grown = replace(group, results=(*group.results, payload))
    return changes | {"exchanges": state.exchanges.set(len(state.exchanges) - 1, grown)}


def _scored(state: RunState, payload: p.ExperimentScored) -> dict[str, Any]:
    changes: dict[str, Any] = {}
    spent = spend_of_payload(payload)
    if spent is not None:
        changes["spend"] = state.spend + spent
    index = payload.attempt - 1
    if 0 <= index < len(state.attempts):
        attempt = replace(
            state.attempts[index],
            scores=payload.subtask_scores,
            normalized=payload.normalized_score,
        )
        changes["attempts"] = state.attempts.set(index, attempt)
    return changes


def _called(state: RunState, payload: p.ModelCalled) -> dict[str, Any]:
    return {
        "calls": state.calls.set(payload.call_id, payload),
        "phase_at_call": state.phase_at_call.set(payload.call_id, state.phase),
        "calls_in_phase": state.calls_in_phase + (payload.attempt == 1),
    }


def _responded(state: RunState, payload: p.ModelResponded) -> dict[str, Any]:
    spent = spend_of_payload(payload)
    phase = state.phase_at_call.get(payload.call_id)
    return {
        "outcomes": state.outcomes.set(payload.call_id, payload),
        "spend": state.spend if spent is None else state.spend + spent,
        "exchanges": state.exchanges.append(Exchange(answer=payload, phase=phase)),
    }


def _parse(content: Any) -> dict[str, Any]:
    try:
        value = json.loads(content) if isinstance(content, str) else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
