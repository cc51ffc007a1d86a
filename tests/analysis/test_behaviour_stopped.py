"""The behaviour figures of a run that stood stopped (`run.interrupted`, resumed the
next morning) leave the night out, as its wall-time limit does
(`runstate.budget.wall_seconds`): it is no time the run spent deciding or queueing
(`TimeUse.idle_s`)."""

from datetime import UTC, datetime, timedelta

from analysis.tally import BehaviourTally
from analysis.tally_state import state_of, tally_from
from events import Event, EventStore
from events.ids import new_id
from events.payloads import (
    Payload,
    RunInterrupted,
    RunResumed,
    RunStarted,
    ToolInvoked,
    ToolReturned,
)
from runstate.trajectory import groups

T0 = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)
STOP = T0 + timedelta(minutes=10)
MORNING = STOP + timedelta(hours=14)
RUN = "run-c1-0"


def test_a_night_stopped_is_neither_duration_nor_idle_time(sqlite_url: str) -> None:
    store = EventStore.from_url(sqlite_url)
    returned = {"tool": "bash", "exit_code": 0, "duration_s": 0}
    timed: list[tuple[datetime, Payload]] = [
        (T0, RunStarted(task="t", lab="lab-0", policy="search")),
        (T0 + timedelta(minutes=1), ToolInvoked(call_id="a", tool="bash", args={})),
        (
            T0 + timedelta(minutes=1),
            ToolReturned(call_id="a", **returned),
        ),
        (STOP, RunInterrupted(detail="Ctrl-C in labrxiv campaign")),
        (MORNING, ToolInvoked(call_id="b", tool="bash", args={})),
        (MORNING, ToolReturned(call_id="b", **returned)),
    ]
    for version, (at, payload) in enumerate(timed):
        event = Event(id=new_id(), stream=RUN, version=version, occurred_at=at, payload=payload)
        store.append([event])
    tally = BehaviourTally(RUN)
    for record in store.read_records(stream=RUN):
        tally.add(record)

    figures = tally.result()

    assert figures.duration_s == 10 * 60.0
    assert figures.time.idle_s == 10 * 60.0


def test_a_tally_saved_while_stopped_goes_on_as_one_never_saved(sqlite_url: str) -> None:
    """The read model keeps a running run's tally between pages (`analysis.tally_state`):
    one saved while the run stands stopped still leaves the stop out."""
    store = EventStore.from_url(sqlite_url)
    timed: list[tuple[datetime, Payload]] = [
        (T0, RunStarted(task="t", lab="lab-0", policy="search")),
        (STOP, RunInterrupted(detail="Ctrl-C in labrxiv campaign")),
        (MORNING, ToolInvoked(call_id="b", tool="bash", args={})),
    ]
    for version, (at, payload) in enumerate(timed):
        event = Event(id=new_id(), stream=RUN, version=version, occurred_at=at, payload=payload)
        store.append([event])
    records = store.read_records(stream=RUN)
    saved = BehaviourTally(RUN)
    for record in records[:2]:
        saved.add(record)
    tally = tally_from(RUN, state_of(saved))
    tally.add(records[2])

    assert tally.result().duration_s == 10 * 60.0


def test_a_stop_closes_the_step_it_follows_as_the_trajectory_cuts_it(sqlite_url: str) -> None:
    """A `run.interrupted` (caused by the run's last event) is no step of its own, and the
    step that resumes the run begins with its `run.resumed` (`runstate.trajectory`)."""
    store = EventStore.from_url(sqlite_url)
    started = Event(
        id=new_id(),
        stream=RUN,
        version=0,
        occurred_at=T0,
        payload=RunStarted(task="t", lab="lab-0", policy="search"),
    )
    invoked = Event(
        id=new_id(),
        stream=RUN,
        version=1,
        occurred_at=T0,
        causation_id=started.id,
        payload=ToolInvoked(call_id="a", tool="bash", args={}),
    )
    stop = Event(
        id=new_id(),
        stream=RUN,
        version=2,
        occurred_at=STOP,
        causation_id=invoked.id,
        payload=RunInterrupted(detail="Ctrl-C in labrxiv campaign"),
    )
    resumed = Event(
        id=new_id(),
        stream=RUN,
        version=3,
        occurred_at=MORNING,
        causation_id=stop.id,
        payload=RunResumed(),
    )
    store.append([started, invoked, stop, resumed])
    tally = BehaviourTally(RUN)
    for record in store.read_records(stream=RUN):
        tally.add(record)

    cut = list(groups(store.read_stream(RUN)))
    assert tally.result().steps == len(cut) == 3
