"""A run's wall-time limit leaves out the time it stood stopped (an embedded campaign
stopped by Ctrl-C, resumed the next day): otherwise every resumed run on a card with a
wall-time limit ended at its first step after `labrxiv resume`."""

from datetime import UTC, datetime, timedelta

from events import Event, EventStore
from events.ids import new_id
from events.payloads import (
    Budget,
    CampaignInterrupted,
    ForkPoint,
    Payload,
    RunStarted,
    ToolInvoked,
)
from events.streams import campaign_stream
from runstate import fold, fold_standing, loader
from workers.lab.budget import over_budget, stopped_seconds

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


def test_the_night_a_run_stood_stopped_is_not_wall_time(sqlite_url: str) -> None:
    store = EventStore.from_url(sqlite_url)
    started = RunStarted(task="t", lab="lab-0", policy="search", budget=Budget(wall_seconds=900))
    run = [
        event("run-1", 0, 0, started),
        event("run-1", 1, 5, ToolInvoked(call_id="c1", tool="evaluate")),
    ]
    store.append(run)
    stop = CampaignInterrupted(runs=["run-1", "run-2"], detail="Ctrl-C")
    store.append([event(campaign_stream("c1"), 0, 6, stop)])
    state = fold(run)
    resumed = T0 + timedelta(hours=14)  # the next morning
    away = stopped_seconds(store, state, resumed)
    assert away == (resumed - (T0 + timedelta(minutes=6))).total_seconds()
    assert over_budget(state, resumed, away) is None, "6 minutes of 15 were used"
    assert over_budget(state, resumed) is not None, "counted from run.started: spent"
    # Once the run moved on after the stop, the stop lasted until its next event.
    later = event("run-1", 2, 14 * 60, ToolInvoked(call_id="c2", tool="evaluate"))
    store.append([later])
    state = fold([*run, later])
    at = T0 + timedelta(hours=14, minutes=10)
    assert stopped_seconds(store, state, at) == away
    assert over_budget(state, at, stopped_seconds(store, state, at)) is not None  # 16 min


def test_a_run_never_stopped_or_without_a_wall_limit_has_no_stopped_time(
    sqlite_url: str,
) -> None:
    store = EventStore.from_url(sqlite_url)
    unlimited = RunStarted(task="t", lab="lab-0", policy="search")
    run = [event("run-1", 0, 0, unlimited)]
    store.append(run)
    store.append([event(campaign_stream("c1"), 0, 1, CampaignInterrupted(runs=["run-1"]))])
    assert stopped_seconds(store, fold(run), T0 + timedelta(hours=9)) == 0.0
    limited = RunStarted(task="t", lab="lab-1", policy="search", budget=Budget(wall_seconds=60))
    other = [event("run-2", 0, 0, limited)]
    store.append(other)
    assert stopped_seconds(store, fold(other), T0 + timedelta(hours=9)) == 0.0


def test_a_fork_of_a_resumed_run_leaves_out_its_parents_night_too(sqlite_url: str) -> None:
    """A fork's elapsed time goes on from its parent's, whose night stopped counted
    against the fork at its first step."""
    store = EventStore.from_url(sqlite_url)
    started = RunStarted(task="t", lab="lab-0", policy="search", budget=Budget(wall_seconds=900))
    parent = [
        event("run-1", 0, 0, started),
        event("run-1", 1, 5, ToolInvoked(call_id="c1", tool="evaluate")),
        event("run-1", 2, 14 * 60, ToolInvoked(call_id="c2", tool="evaluate")),
        event("run-1", 3, 14 * 60 + 2, ToolInvoked(call_id="c3", tool="evaluate")),
    ]
    store.append(parent)
    store.append([event(campaign_stream("c1"), 0, 6, CampaignInterrupted(runs=["run-1"]))])
    forked = started.model_copy(update={"forked_from": ForkPoint(run="run-1", step=3, version=3)})
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
    away = stopped_seconds(store, state, now)
    assert away == timedelta(hours=14, minutes=-6).total_seconds()
    assert over_budget(state, now, away) is None, "8 minutes of 15 were worked"
    assert over_budget(state, now) is not None
