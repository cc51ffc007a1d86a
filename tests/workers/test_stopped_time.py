"""A run's wall-time limit leaves out the time it stood stopped (an embedded campaign
stopped by Ctrl-C, resumed the next day): otherwise every resumed run on a card with a
wall-time limit ended at its first step after `labrxiv resume`. The stop is the run's
own `run.interrupted`, to its next event."""

from datetime import UTC, datetime, timedelta

from events import Event, EventStore
from events.ids import new_id
from events.payloads import (
    Budget,
    CampaignInterrupted,
    ForkPoint,
    Payload,
    RunInterrupted,
    RunStarted,
    ToolInvoked,
)
from events.streams import campaign_stream
from runstate import fold, fold_standing, loader
from runstate.budget import wall_used
from workers.lab.budget import over_budget

T0 = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)


def event(stream: str, version: int, minutes: float, payload: Payload) -> Event:
    return Event(
        id=new_id(),
        stream=stream,
        version=version,
        occurred_at=T0 + timedelta(minutes=minutes),
        correlation_id="c1",
        payload=payload,
    )


def test_the_night_a_run_stood_stopped_is_not_wall_time() -> None:
    started = RunStarted(task="t", lab="lab-0", policy="search", budget=Budget(wall_seconds=900))
    run = [
        event("run-1", 0, 0, started),
        event("run-1", 1, 5, ToolInvoked(call_id="c1", tool="evaluate")),
        event("run-1", 2, 6, RunInterrupted(detail="Ctrl-C")),
    ]
    state = fold(run)
    resumed = T0 + timedelta(hours=14)  # the next morning
    assert wall_used(state, resumed) == 6 * 60
    assert over_budget(state, resumed) is None, "6 minutes of 15 were used"
    # Once the run moved on after the stop, the stop lasted until its next event.
    later = event("run-1", 3, 14 * 60, ToolInvoked(call_id="c2", tool="evaluate"))
    state = fold([*run, later])
    assert state.stopped_s == (resumed - (T0 + timedelta(minutes=6))).total_seconds()
    at = T0 + timedelta(hours=14, minutes=10)
    assert over_budget(state, at) is not None  # 16 min


def test_a_run_never_stopped_counts_all_its_time(sqlite_url: str) -> None:
    """A stop its stream does not hold (a log written before runs recorded their stops
    names it only in `campaign.interrupted`) is wall time used."""
    store = EventStore.from_url(sqlite_url)
    limited = RunStarted(task="t", lab="lab-0", policy="search", budget=Budget(wall_seconds=60))
    run = [event("run-1", 0, 0, limited)]
    store.append(run)
    store.append([event(campaign_stream("c1"), 0, 1, CampaignInterrupted(runs=["run-1"]))])
    assert wall_used(fold(run), T0 + timedelta(hours=9)) == 9 * 3600
    assert fold(run).stopped_s == 0.0


def test_a_fork_of_a_resumed_run_leaves_out_its_parents_night_too(sqlite_url: str) -> None:
    """A fork's elapsed time goes on from its parent's, whose night stopped counted
    against the fork at its first step."""
    store = EventStore.from_url(sqlite_url)
    started = RunStarted(task="t", lab="lab-0", policy="search", budget=Budget(wall_seconds=900))
    parent = [
        event("run-1", 0, 0, started),
        event("run-1", 1, 5, ToolInvoked(call_id="c1", tool="evaluate")),
        event("run-1", 2, 6, RunInterrupted(detail="Ctrl-C")),
        event("run-1", 3, 14 * 60, ToolInvoked(call_id="c2", tool="evaluate")),
        event("run-1", 4, 14 * 60 + 2, ToolInvoked(call_id="c3", tool="evaluate")),
    ]
    store.append(parent)
    forked = started.model_copy(update={"forked_from": ForkPoint(run="run-1", step=3, version=4)})
    fork = Event(
        id=new_id(),
        stream="run-2",
        version=0,
        occurred_at=T0 + timedelta(hours=14, minutes=5),
        correlation_id="c2",
        payload=forked,
    )
    store.append([fork])
    state = fold_standing([fork], loader(store))
    now = fork.occurred_at
    assert state.stopped_s == timedelta(hours=14, minutes=-6).total_seconds()
    assert wall_used(state, now) == 8 * 60, "8 minutes of 15 were worked"
    assert over_budget(state, now) is None


def test_a_fork_of_a_stopped_run_runs_from_its_start(sqlite_url: str) -> None:
    """A fork made at its parent's stop does not stand stopped: its time counts."""
    store = EventStore.from_url(sqlite_url)
    started = RunStarted(task="t", lab="lab-0", policy="search", budget=Budget(wall_seconds=900))
    parent = [
        event("run-1", 0, 0, started),
        event("run-1", 1, 5, ToolInvoked(call_id="c1", tool="evaluate")),
        event("run-1", 2, 6, RunInterrupted(detail="Ctrl-C")),
    ]
    store.append(parent)
    forked = started.model_copy(update={"forked_from": ForkPoint(run="run-1", step=1, version=2)})
    fork = event("run-2", 0, 60, forked)
    store.append([fork])
    state = fold_standing([fork], loader(store))
    assert state.stopped_at is None
    assert wall_used(state, fork.occurred_at + timedelta(minutes=3)) == 9 * 60
