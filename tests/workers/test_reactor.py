"""Reactions come from the log: a recorder that dies between its append and its
reactions loses no step; reactors running together send each
reaction once in effect; a crash before the checkpoint moves sends again; a run whose
step is being taken is not reaped, and a run whose step was lost is."""

import threading
import time
from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from events import Event, EventStore
from events.envelope import as_utc
from events.ids import new_id, utcnow
from events.payloads import Budget, RunStarted, ToolInvoked
from events.recorded import Recorded
from labrxiv.settings import load_settings
from labrxiv.wiring import open_embedded
from runstate import fold
from workers.bus.memory import MemoryBus
from workers.lab.campaign import CampaignPlan, start_campaign
from workers.lab.lease import STEP_LEASES, Leases, lease_engine
from workers.lab.reaper import stalled_runs
from workers.reactions import REACTIONS
from workers.reactor import Reactor


def _runs(store: EventStore, count: int, steps: int) -> list[Event]:
    events = []
    for run in range(count):
        stream = f"run-r{run}"
        started = RunStarted(task="continual-digits", lab=f"lab-{run}", policy="search")
        events.append(
            Event(id=new_id(), stream=stream, version=0, occurred_at=utcnow(), payload=started)
        )
        for version in range(1, steps):
            tool = ToolInvoked(call_id=f"c{version}", tool="bash", args={})
            events.append(
                Event(
                    id=new_id(), stream=stream, version=version, occurred_at=utcnow(), payload=tool
                )
            )
    store.append(events)
    return events


def test_steps_recorded_by_a_recorder_that_died_before_reacting_are_sent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every recorder dies right after its append, before its reactions (as a SIGKILL
    ~20 ms after recording did): the runs' next steps are still sent, by a reactor
    catching up from the log, and every run finishes `done`."""
    monkeypatch.setattr("workers.recorder._react", lambda ctx, appended: None)
    system = open_embedded(load_settings(data_dir=tmp_path / "data"), threads=2)
    try:
        plan = CampaignPlan(
            task="continual-digits", labs=2, papers=1, mode="isolated", seed=3, attempts=2
        )
        _campaign, runs = start_campaign(system.bus, plan)
        system.bus.join()
        assert all(len(system.store.read_stream(run)) == 1 for run in runs), (
            "with reactions on the recorder's success path only, the runs stall here"
        )
        other_process = Reactor(system.store, system.bus, REACTIONS)
        for _ in range(200):
            system.bus.join()
            if not other_process.catch_up():
                break
        for run in runs:
            state = fold(system.store.read_stream(run))
            assert state.finished is not None and state.finished.reason == "done", run
            assert len(state.attempts) == 2 and len(state.papers) == 1
    finally:
        system.close()


def test_reactors_catching_up_together_send_each_reaction_once(store_url: str) -> None:
    store = EventStore.from_url(store_url)
    _runs(store, count=30, steps=20)
    bus = MemoryBus()
    reactors = [Reactor(store, bus, REACTIONS, page=7) for _ in range(4)]
    threads = [threading.Thread(target=r.catch_up) for r in reactors]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    steps = [args for task, args in bus.sent]
    assert len(steps) == len(set(steps)), "no reaction sent twice"
    last = {(f"run-r{r}", 19) for r in range(30)}
    assert last <= set(steps), "every run's latest event led to its next step"
    assert reactors[0].position() == store.max_position()


def test_a_poke_for_an_append_a_catch_up_already_took_begins_no_transaction(
    sqlite_url: str,
) -> None:
    """A recorder pokes the reactor with the last position it appended: when this
    reactor's checkpoint is already there (a neighbour's catch-up took the event), it
    begins no write transaction; an append past it is still reacted to."""
    store = EventStore.from_url(sqlite_url)
    _runs(store, count=2, steps=3)
    bus = MemoryBus()
    reactor = Reactor(store, bus, REACTIONS)
    reactor.catch_up()
    reached = store.max_position()
    claims: list[int] = []
    page = reactor._react_after

    def counted(seen: int) -> list[Recorded]:
        claims.append(1)
        return page(seen)

    reactor._react_after = counted  # type: ignore[method-assign]
    reactor.poke(reached)
    assert claims == [], "nothing past the checkpoint: no page begun"
    more = ToolInvoked(call_id="c3", tool="bash", args={})
    [appended] = store.append(
        [Event(id=new_id(), stream="run-r0", version=3, occurred_at=utcnow(), payload=more)]
    ).appended
    assert appended.position is not None and appended.position > reached
    reactor.poke(appended.position)
    assert claims, "an append past the checkpoint is caught up"
    assert ("run-r0", 3) in [args for _, args in bus.sent]
    assert reactor.position() == appended.position


def test_writers_go_on_while_a_reactor_sends_its_page(store_url: str) -> None:
    """A reactor's page keeps no writer waiting while it sends the page's reactions: on
    SQLite a write transaction holds the file's one writer lock, and a reactor that sent
    inside one kept every lab's append waiting for it."""
    store = EventStore.from_url(store_url)
    _runs(store, count=2, steps=3)
    appended: list[int] = []

    def append_meanwhile(store: EventStore, bus: Any, recorded: Sequence[Recorded]) -> None:
        if appended:
            return  # the page after: the event appended here
        more = ToolInvoked(call_id="late", tool="bash", args={})
        event = Event(id=new_id(), stream="run-r1", version=3, occurred_at=utcnow(), payload=more)
        writer = threading.Thread(
            target=lambda: appended.append(len(store.append([event]).appended))
        )
        writer.start()
        writer.join(timeout=30)  # the append is a few milliseconds unless it waits for us
        assert appended == [1], "a lab's append waited for the reactor's page"

    reactor = Reactor(store, MemoryBus(), [append_meanwhile])
    before = store.max_position()
    assert reactor.catch_up() == before + 1, "the page, then the event appended meanwhile"
    assert appended == [1]


class CountingStore(EventStore):
    """A store that counts its reads of the log by position."""

    reads = 0

    def read_records(self, *args: Any, **kwargs: Any) -> list[Recorded]:
        self.reads += 1
        return super().read_records(*args, **kwargs)


def test_a_catch_up_that_reaches_the_head_reads_the_log_once(store_url: str) -> None:
    """A page shorter than a page is the head unless the log moved on meanwhile: no
    second page's turn, checkpoint and log read to find nothing (each catch-up of a
    lab's append paid them)."""
    store = CountingStore.from_url(store_url)
    _runs(store, count=2, steps=3)
    reactor = Reactor(store, MemoryBus(), REACTIONS, page=4)
    assert reactor.catch_up() == 6
    assert store.reads == 2, "a full page, then the short one at the head"
    assert reactor.catch_up() == 0 and store.reads == 3
    assert reactor.position() == store.max_position()


def test_a_crash_before_the_checkpoint_moves_sends_again(sqlite_url: str) -> None:
    store = EventStore.from_url(sqlite_url)
    _runs(store, count=2, steps=3)
    bus = MemoryBus()
    crashes = [True]

    def sends_then_dies(store: EventStore, bus: Any, recorded: Sequence[Recorded]) -> None:
        REACTIONS[0](store, bus, recorded)
        if crashes.pop(0) if crashes else False:
            raise RuntimeError("killed after sending")

    reactor = Reactor(store, bus, [sends_then_dies])
    with pytest.raises(RuntimeError):
        reactor.catch_up()
    assert reactor.position() == 0, "the checkpoint did not move past what may not be sent"
    reactor.catch_up()
    assert reactor.position() == store.max_position()
    assert sorted(args for _, args in bus.sent) == sorted([("run-r0", 2), ("run-r1", 2)] * 2), (
        "sent again after the crash: harmless, a step is addressed by its version"
    )


def test_a_run_whose_step_is_being_taken_is_not_reaped(sqlite_url: str) -> None:
    store = EventStore.from_url(sqlite_url)
    started = RunStarted(task="continual-digits", lab="a", policy="search", budget=Budget())
    first = Event(id=new_id(), stream="run-x", version=0, occurred_at=utcnow(), payload=started)
    store.append([first])
    # 3 s: the look just after taking the lease has that long to happen on a busy machine
    # (0.6 s left it one stall of the test's thread from a lease seen expired).
    leases = Leases(store, ttl=3.0)

    def expiry() -> datetime:
        with lease_engine(store).connect() as conn:
            return as_utc(conn.execute(select(STEP_LEASES.c.expires_at)).scalar_one())

    assert stalled_runs(store, ["run-x"], timedelta(0), leases=leases) == [("run-x", 0)]
    with leases.holding("run-x", 0):
        assert stalled_runs(store, ["run-x"], timedelta(0), leases=leases) == []
        first_expiry, deadline = expiry(), time.monotonic() + 10
        while expiry() == first_expiry:  # renewed while the step runs
            assert time.monotonic() < deadline, "the lease was not renewed"
            time.sleep(0.05)
    after_expiry = utcnow() + timedelta(seconds=4)  # past the last renewal's expiry
    assert stalled_runs(store, ["run-x"], timedelta(0), after_expiry, leases) == [("run-x", 0)]


class _Flaky:
    """A reactor whose catch-ups raise the given errors first, then stop the loop."""

    def __init__(self, errors: list[Exception], stop: threading.Event) -> None:
        self.errors, self.stop, self.calls = errors, stop, 0

    def catch_up(self) -> int:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        self.stop.set()
        return 0


def test_the_reactor_loop_retries_transient_faults_and_stops_on_a_bug() -> None:
    """The reactor's loop uses the one retry policy (`workers.retry`): a dropped database
    connection is waited out, a bug in a reaction is not looped on for ever."""
    from sqlalchemy.exc import OperationalError

    from workers.reactor import run_reactor
    from workers.retry import RetryPolicy

    stop = threading.Event()
    dropped = OperationalError("SELECT 1", {}, Exception("terminating connection"))
    flaky = _Flaky([dropped, dropped], stop)
    quick = RetryPolicy(base_s=0.001, cap_s=0.001)
    run_reactor(flaky, 0.001, stop=stop, policy=quick)  # type: ignore[arg-type]
    assert flaky.calls == 3

    buggy = _Flaky([KeyError("phase")], threading.Event())
    with pytest.raises(KeyError):
        run_reactor(buggy, 0.001, policy=quick)  # type: ignore[arg-type]
    assert buggy.calls == 1
