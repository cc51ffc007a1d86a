"""The step that takes up a stopped run (`run.interrupted`) records `run.resumed` first,
where its own events begin, so a reader that selects a run's events by type sees where
the stop ended. It is one of the step's events: a step taken twice repeats it (the same
id, derived from the run and the version), and a step that sends nothing leaves the run
stopped."""

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from events import Event
from events.ids import new_id
from events.payloads import (
    Budget,
    Payload,
    RunInterrupted,
    RunStarted,
    ToolInvoked,
    ToolReturned,
)
from events.streams import event_id_at
from labrxiv.settings import load_settings
from labrxiv.wiring import open_store, worker_context
from runstate import fold
from tests.sent_bus import Sent
from workers.context import WorkerContext
from workers.lab.emitter import Emitter, resumed
from workers.lab.step import lab_step

T0 = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)
RUN = "run-c1-0"


def _stopped() -> list[Event]:
    timed: list[tuple[Payload, datetime]] = [
        (RunStarted(task="t", lab="lab-0", policy="search", budget=Budget(steps=1)), T0),
        (ToolInvoked(call_id="a", tool="bash", args={}), T0 + timedelta(minutes=1)),
        (RunInterrupted(detail="Ctrl-C"), T0 + timedelta(minutes=2)),
    ]
    return [
        Event(id=new_id(), stream=RUN, version=v, occurred_at=at, correlation_id="c1", payload=p)
        for v, (p, at) in enumerate(timed)
    ]


def _returned() -> ToolReturned:
    return ToolReturned(call_id="a", tool="bash", exit_code=0, duration_s=1.0)


@pytest.fixture
def ctx(tmp_path: Path) -> Iterator[WorkerContext]:
    settings = load_settings(data_dir=tmp_path / "data")
    store = open_store(settings)
    yield worker_context(settings, store, Sent())
    store.engine.dispose()


def test_a_stopped_runs_step_begins_with_run_resumed_and_repeats_it_when_taken_twice(
    ctx: WorkerContext,
) -> None:
    """The step after the stop ends the run (its one step was taken): `run.resumed`, then
    `budget.exceeded` and `run.finished`; a second take sends the same events."""
    ctx.store.append(_stopped())
    state = fold(_stopped())

    lab_step(ctx, RUN, 2)
    first = ctx.bus.published()  # type: ignore[attr-defined]
    lab_step(ctx, RUN, 2)  # taken again: nothing was recorded meanwhile (the bus runs nothing)
    both = ctx.bus.published()  # type: ignore[attr-defined]

    kinds = [e["payload"]["type"] for e in first]
    assert kinds == ["run.resumed", "budget.exceeded", "run.finished"]
    assert [e["id"] for e in both[len(first) :]] == [e["id"] for e in first]
    assert first[0]["id"] == str(event_id_at(RUN, 3, state.last_at)) and first[0]["version"] == 3


def test_a_step_that_sends_nothing_leaves_the_run_stopped() -> None:
    state = fold(_stopped())

    assert resumed(state, []) == []


def test_a_session_records_run_resumed_once_before_its_first_batch() -> None:
    bus = Sent()
    emitter = Emitter(bus, fold(_stopped()))

    emitter.emit([_returned()])
    emitter.emit([ToolInvoked(call_id="b", tool="bash", args={})])

    kinds = [e["payload"]["type"] for e in bus.published()]
    assert kinds == ["run.resumed", "tool.returned", "tool.invoked"]
    assert emitter.state.stopped_at is None and emitter.state.stopped_s > 0
