"""The wall time a run has used is counted once: the lab's limit, the detectors' fractions
and the metrics' budget figures agree on a run that stood stopped (an embedded campaign
stopped by Ctrl-C and resumed the next morning) and on a fork of it, and none of them
counts the night."""

from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from analysis.detectors.view import read_run, used
from events import Event, EventStore
from events.ids import new_id
from events.payloads import Budget, ForkPoint, Payload, RunStarted, ToolInvoked
from events.recorded import Fact
from projections.catalogue import all_projectors
from projections.metrics import Bounds, ResearchCollector
from projections.runner import ProjectionRunner
from runstate import RunState, fold_standing, loader
from workers.lab import interrupt
from workers.lab.budget import over_budget

T0 = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)
STOP = T0 + timedelta(minutes=10)
MORNING = STOP + timedelta(hours=14)
LIMIT = 900.0
RUN, FORK = "run-c1-0", "run-c2-0"


def _event(stream: str, at: datetime, payload: Payload, store: EventStore) -> Event:
    return Event(
        id=new_id(),
        stream=stream,
        version=store.stream_version(stream) + 1,
        occurred_at=at,
        correlation_id="c1" if stream == RUN else "c2",
        payload=payload,
    )


def _append(store: EventStore, stream: str, at: datetime, payload: Payload) -> None:
    store.append([_event(stream, at, payload, store)])


def _tool(call: str) -> ToolInvoked:
    return ToolInvoked(call_id=call, tool="bash", args={"command": "true"})


def _lab_wall(state: RunState, now: datetime) -> float:
    """The wall seconds the lab counts at `now`: what its limit says, once spent."""
    spent = state.started.model_copy(update={"budget": Budget(wall_seconds=1e-9)})
    over = over_budget(replace(state, started=spent), now)
    assert over is not None and over.budget == "wall_seconds"
    return over.used


def _metrics_wall_used(store: EventStore) -> dict[str, float]:
    ProjectionRunner(store, all_projectors()).catch_up()
    found: dict[str, float] = {}
    for metric in ResearchCollector(store.engine, Bounds()).collect():
        for sample in metric.samples:
            labels = sample.labels
            if sample.name == "labrxiv_run_budget_used" and labels["budget"] == "wall_seconds":
                found[labels["run"]] = sample.value
    return found


def _stream(store: EventStore, stream: str) -> Sequence[Fact]:
    return store.read_stream(stream)


def _stopped_overnight(store: EventStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run worked 10 minutes, stopped by Ctrl-C, stood stopped 14 hours, then was
    worked 2 more minutes."""
    started = RunStarted(task="t", lab="lab-0", policy="search", budget=Budget(wall_seconds=LIMIT))
    _append(store, RUN, T0, started)
    _append(store, RUN, T0 + timedelta(minutes=5), _tool("a"))
    monkeypatch.setattr(interrupt, "utcnow", lambda: STOP)
    assert interrupt.record_interrupted(store, "c1", [RUN], "Ctrl-C in labrxiv campaign")
    _append(store, RUN, MORNING, _tool("b"))
    _append(store, RUN, MORNING + timedelta(minutes=2), _tool("c"))


def test_lab_detectors_and_metrics_count_one_wall_time(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = EventStore.from_url(sqlite_url)
    _stopped_overnight(store, monkeypatch)
    events = _stream(store, RUN)
    worked = 12 * 60.0
    last = MORNING + timedelta(minutes=2)
    state = fold_standing(events, loader(store))
    assert _lab_wall(state, last) == worked
    stopped = fold_standing(events[:3], loader(store))  # the night: the step resuming it
    assert isinstance(stopped.last, ToolInvoked), "it takes up what the stop left"
    assert _lab_wall(stopped, MORNING) == 10 * 60.0
    assert over_budget(stopped, MORNING) is None
    assert used(read_run(events).final)["wall_seconds"] * LIMIT == worked
    assert _metrics_wall_used(store)[RUN] == worked


def test_a_fork_of_a_resumed_run_counts_its_parents_work_not_its_night(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = EventStore.from_url(sqlite_url)
    _stopped_overnight(store, monkeypatch)
    point = ForkPoint(run=RUN, step=3, version=store.stream_version(RUN))
    forked = RunStarted(
        task="t",
        lab="lab-0",
        policy="search",
        budget=Budget(wall_seconds=LIMIT),
        forked_from=point,
    )
    begun = MORNING + timedelta(hours=1)
    _append(store, FORK, begun, forked)
    _append(store, FORK, begun + timedelta(minutes=1), _tool("d"))
    events = _stream(store, FORK)
    worked = 13 * 60.0  # the parent's 12 minutes and its own one
    state = fold_standing(events, loader(store))
    assert _lab_wall(state, begun + timedelta(minutes=1)) == worked
    view = read_run(events, loader(store))
    assert used(view.final)["wall_seconds"] * LIMIT == worked
    assert _metrics_wall_used(store)[FORK] == worked
