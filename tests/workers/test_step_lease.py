"""A step is taken by one worker at a time (`workers.lab.lease`): a second delivery of a
step being taken (the reactor sending a reaction again after a crash, kombu bringing a
message back from a worker it took for dead) waits for the first take's lease instead of
running the same tools in the same workspace beside it; a take that raised gives its
lease back; a dead take's lease runs out and the step is taken then."""

import threading
import time
from collections.abc import Iterator, Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import BigInteger, Column, DateTime, MetaData, String, Table, insert, select
from sqlalchemy.exc import ObjectNotExecutableError, OperationalError

from events import Event, EventStore
from events.engines import writing
from events.ids import new_id, utcnow
from events.payloads import Payload, RunStarted, ToolInvoked
from labrxiv.settings import load_settings
from labrxiv.wiring import open_store, worker_context
from runstate import RunState
from tests.sent_bus import Sent
from workers.context import WorkerContext
from workers.errors import RetryLater
from workers.lab import lease as lease_module
from workers.lab import step as step_module
from workers.lab.lease import STEP_LEASES, Held, Leases, Taken, lease_engine
from workers.lab.step import lab_step

STREAM = "run-lease-0"


@pytest.fixture
def ctx(tmp_path: Path) -> Iterator[WorkerContext]:
    settings = load_settings(data_dir=tmp_path / "data")
    store = open_store(settings)
    made = worker_context(settings, store, Sent())
    assert made.leases is not None  # every worker labrxiv starts holds step leases
    started = RunStarted(task="t", lab="lab-a", policy="search")
    store.append(
        [Event(id=new_id(), stream=STREAM, version=0, occurred_at=utcnow(), payload=started)]
    )
    yield made
    store.engine.dispose()


class Blocking:
    """A step's work (`_act`) that holds the first take until released; counts takes."""

    def __init__(self) -> None:
        self.takes = 0
        self.inside = threading.Event()
        self.release = threading.Event()

    def __call__(
        self, _ctx: WorkerContext, _state: RunState, version: int, _final: bool, _emitter: object
    ) -> tuple[list[Payload], dict[str, bytes]]:
        self.takes += 1
        if self.takes == 1:
            self.inside.set()
            assert self.release.wait(30), "the test never released the first take"
        return [ToolInvoked(call_id=f"call-{version}", tool="bash", args={})], {}


def _first_take(ctx: WorkerContext, work: Blocking) -> threading.Thread:
    first = threading.Thread(target=lab_step, args=(ctx, STREAM, 0))
    first.start()
    assert work.inside.wait(30), "the first take never began"
    return first


def test_a_second_delivery_runs_later_instead_of_beside_the_first(
    ctx: WorkerContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    work = Blocking()
    monkeypatch.setattr(step_module, "_act", work)
    first = _first_take(ctx, work)
    try:
        with pytest.raises(RetryLater, match="being taken elsewhere") as later:
            lab_step(ctx, STREAM, 0, final=False)
    finally:
        work.release.set()
        first.join(30)
    assert work.takes == 1  # not two takes of one step at once
    assert ctx.leases is not None
    assert 0 < (later.value.delay_s or 0) <= step_module.HELD_RETRY


def test_a_final_delivery_waits_and_finds_the_step_taken(
    ctx: WorkerContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the bus cannot run it later, the second take waits for the lease; by then the
    first take's events are recorded, and it does nothing."""
    work = Blocking()
    monkeypatch.setattr(step_module, "_act", work)
    first = _first_take(ctx, work)
    waits: list[float] = []

    def wait(seconds: float) -> None:  # the first take ends, and is recorded, meanwhile
        waits.append(seconds)
        work.release.set()
        first.join(30)
        bus = ctx.bus
        assert isinstance(bus, Sent)
        ctx.store.append([Event.model_validate(e) for e in bus.published()])

    monkeypatch.setattr(step_module, "_wait", wait)
    try:
        lab_step(ctx, STREAM, 0, final=True)
    finally:
        work.release.set()
        first.join(30)
    assert work.takes == 1 and len(waits) == 1
    assert [e.version for e in ctx.store.read_stream(STREAM)] == [0, 1]


def test_a_second_take_after_the_first_sent_its_events_does_nothing_at_once(
    ctx: WorkerContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On one thread (the deterministic demo's bus) the first take's events wait on the
    queue behind the second take: waiting in place for the first take's lease, it held
    up their recording for the whole lease (30 s), then took the step again."""
    work = Blocking()
    work.takes = 1  # no blocking: every take is counted past the first
    monkeypatch.setattr(step_module, "_act", work)
    lab_step(ctx, STREAM, 0, final=True)  # its events sent, not recorded yet

    def wait(seconds: float) -> None:
        raise AssertionError(f"waited {seconds}s for the lease of a take that had ended")

    monkeypatch.setattr(step_module, "_wait", wait)
    lab_step(ctx, STREAM, 0, final=True)
    lab_step(ctx, STREAM, 0, final=False)  # nor run again later: nothing is left to do
    assert work.takes == 2  # one take
    bus = ctx.bus
    assert isinstance(bus, Sent) and len(bus.published()) == 1


def test_a_second_take_late_in_the_first_takes_lease_still_does_nothing_at_once(
    ctx: WorkerContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On one thread, other labs' steps may run between the first take's end and the
    second take (their messages were queued before the first take's events): three
    quarters of a lease later, the first take's lease still stands and its events still
    wait behind the second take. Waiting in place for that lease held up their recording
    until it ran out, then took the step again."""
    work = Blocking()
    work.takes = 1  # no blocking: every take is counted past the first
    monkeypatch.setattr(step_module, "_act", work)
    lab_step(ctx, STREAM, 0, final=True)  # its events sent, not recorded yet
    leases = ctx.leases
    assert leases is not None
    clock = [utcnow() + timedelta(seconds=leases.ttl * 0.75)]
    monkeypatch.setattr(lease_module, "utcnow", lambda: clock[0])
    assert leases.live([STREAM], clock[0]) == {STREAM: 0}  # the first take's lease stands
    waits: list[float] = []

    def wait(seconds: float) -> None:  # the bus thread waits: nothing is recorded meanwhile
        waits.append(seconds)
        clock[0] += timedelta(seconds=seconds)

    monkeypatch.setattr(step_module, "_wait", wait)
    lab_step(ctx, STREAM, 0, final=True)
    assert (waits, work.takes) == ([], 2)  # no wait, and one take of the step


def test_a_take_that_sent_nothing_leaves_the_step_free_at_once(
    ctx: WorkerContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run waiting for its paper's reviews takes steps that send nothing until the
    decision is in (the `review.awaited` step, then the decision's wake-up: one step after
    the same version). Nothing of the first is in flight, so its lease is free to the
    same step: the wake-up is taken at once (it waited out the whole lease, 30 s a review
    round)."""
    takes: list[bool] = []

    def waiting_then_decided(
        _ctx: WorkerContext, _state: RunState, version: int, _final: bool, _emitter: object
    ) -> tuple[list[Payload], dict[str, bytes]]:
        takes.append(True)
        if len(takes) == 1:
            return [], {}  # not decided yet: idle until woken
        return [ToolInvoked(call_id=f"call-{version}", tool="bash", args={})], {}

    monkeypatch.setattr(step_module, "_act", waiting_then_decided)
    leases = ctx.leases
    assert leases is not None
    lab_step(ctx, STREAM, 0, final=False)
    assert leases.live([STREAM]) == {STREAM: 0}  # the reaper leaves the waiting run alone
    lab_step(ctx, STREAM, 0, final=False)  # the wake-up: not RetryLater
    assert len(takes) == 2
    with pytest.raises(Taken):  # and the lease now says the wake-up's events were sent
        with leases.holding(STREAM, 0):
            pass


def test_a_take_that_raised_gives_its_lease_back(
    ctx: WorkerContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*_args: Any) -> Any:
        raise RetryLater("the model's next attempt is not due")

    monkeypatch.setattr(step_module, "_act", broken)
    with pytest.raises(RetryLater, match="not due"):
        lab_step(ctx, STREAM, 0, final=False)
    work = Blocking()
    work.takes = 1  # do not block: this is the retry, taken at once
    monkeypatch.setattr(step_module, "_act", work)
    lab_step(ctx, STREAM, 0, final=False)
    assert work.takes == 2


def test_a_dead_takes_lease_runs_out_and_the_step_is_taken_then(
    ctx: WorkerContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    leases = ctx.leases
    assert leases is not None
    dead = Leases(ctx.store, ttl=leases.ttl)
    dead._take(STREAM, 0, "killed-mid-step")  # took the step, then was killed: no renewals
    work = Blocking()
    work.takes = 1
    monkeypatch.setattr(step_module, "_act", work)
    began = now = utcnow()
    retries = 0
    while True:  # the bus runs it again after each delay, until the lease ran out
        monkeypatch.setattr(lease_module, "utcnow", lambda at=now: at)
        try:
            lab_step(ctx, STREAM, 0, final=False)
            break
        except RetryLater as later:
            assert work.takes == 1
            retries += 1
            assert retries < 50, "never taken"
            now += timedelta(seconds=later.delay_s or 0)
    assert work.takes == 2
    assert (now - began).total_seconds() >= leases.ttl  # taken once the lease ran out


# -- the leases themselves, on both backends ------------------------------------------


@pytest.fixture
def store(store_url: str) -> Iterator[EventStore]:
    made = EventStore.from_url(store_url)
    yield made
    made.engine.dispose()


def test_a_lease_is_exclusive_to_its_step_and_taker(
    store: EventStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    leases, other = Leases(store, ttl=5.0), Leases(store, ttl=5.0)
    with leases.holding("run-x", 3):
        with pytest.raises(Held) as held, other.holding("run-x", 3):
            pass
        assert 0 < held.value.left <= 5.0
        with other.holding("run-y", 3):  # another run's step
            pass
    with pytest.raises(Taken):  # its own process knows the ended take sent its events
        with leases.holding("run-x", 3):
            pass
    with pytest.raises(Held):  # another waits for the lease, left to run out
        with other.holding("run-x", 3):
            pass
    third = Leases(store, ttl=5.0)
    with other.holding("run-x", 4):  # the run's next step: the old lease is not its
        with pytest.raises(Taken):  # a stale take of the step before: its step is done
            with third.holding("run-x", 3):
                pass
    with pytest.raises(Taken):  # and once the next one sent
        with third.holding("run-x", 3):
            pass
    later = utcnow() + timedelta(seconds=6)
    monkeypatch.setattr(lease_module, "utcnow", lambda: later)
    with other.holding("run-x", 4):  # ran out
        pass


def test_an_idle_takes_lease_is_free_to_the_same_step_alone(store: EventStore) -> None:
    leases, other = Leases(store, ttl=5.0), Leases(store, ttl=5.0)
    with leases.holding("run-z", 5) as take:
        take.sent_nothing()
    assert leases.live(["run-z"]) == {"run-z": 5}  # live: the reaper leaves the run alone
    with pytest.raises(Taken):  # a stale take of the step before: its step is done
        with other.holding("run-z", 4):
            pass
    with other.holding("run-z", 5):  # the same step again (a wake-up): taken at once
        pass


def test_a_take_ended_while_the_database_is_away_leaves_its_lease_to_run_out(
    store: EventStore, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Ending a take is best effort: with the database away the block's own end stands
    (a warning, not a failed step) and another take waits for the lease to run out."""
    leases, other = Leases(store, ttl=5.0), Leases(store, ttl=5.0)
    away = OperationalError("UPDATE step_leases", None, Exception("server closed the connection"))

    def unreachable(*_args: object, **_kwargs: object) -> None:
        raise away

    with leases.holding("run-d", 1) as take:
        take.sent_nothing()
        monkeypatch.setattr(lease_module, "writing", unreachable)
    monkeypatch.undo()
    assert "the step's lease was not ended" in caplog.text
    with pytest.raises(Held):
        with other.holding("run-d", 1):
            pass


def test_a_defect_in_ending_a_take_is_raised_not_logged(
    store: EventStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only the database away is tolerated: a statement that cannot run (a wrong bind
    name, say) fails the take instead of hiding behind a warning and a 30 s lease."""
    leases = Leases(store, ttl=5.0)
    monkeypatch.setattr(lease_module, "_MARK", object())
    with pytest.raises(ObjectNotExecutableError):
        with leases.holding("run-e", 1) as take:
            take.sent_nothing()


def test_a_forgotten_lease_is_free_to_the_process_that_forgot_it(store: EventStore) -> None:
    """`forget` removes the leases whoever holds them: a sent take's events may have been
    dropped with the bus, and the step is taken again when the run goes on."""
    leases = Leases(store, ttl=5.0)
    with leases.holding("run-f", 2):  # sent its events, dropped at the stop
        pass
    leases.forget(["run-f"])
    assert leases.live(["run-f"]) == {}
    with leases.holding("run-f", 2):  # the run goes on: its step is taken again at once
        pass


def test_a_renewal_never_takes_back_a_lease_another_took_over(
    store: EventStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    slow, quick = Leases(store, ttl=5.0), Leases(store, ttl=5.0)
    stuck = utcnow()
    monkeypatch.setattr(lease_module, "utcnow", lambda: stuck)
    with slow.holding("run-x", 0):
        monkeypatch.setattr(lease_module, "utcnow", lambda: stuck + timedelta(seconds=6))
        with quick.holding("run-x", 0):
            with lease_engine(store).connect() as conn:
                holder = conn.execute(select(STEP_LEASES.c.holder)).scalar_one()
            assert slow._renew({"not-the-holder": "run-x"}) == set()
            with lease_engine(store).connect() as conn:
                assert conn.execute(select(STEP_LEASES.c.holder)).scalar_one() == holder


def test_a_lease_table_an_older_labrxiv_made_gets_its_holder_column(store: EventStore) -> None:
    old = Table(
        "step_leases",
        MetaData(),
        Column("stream", String(200), primary_key=True),
        Column("version", BigInteger, nullable=False),
        Column("expires_at", DateTime(timezone=True), nullable=False),
    )
    old.create(lease_engine(store))
    live = utcnow() + timedelta(seconds=60)
    with lease_engine(store).begin() as conn:  # a take of an older labrxiv: no holder to compare
        conn.execute(insert(old).values(stream="run-x", version=0, expires_at=live))
    leases = Leases(store, ttl=5.0)
    with leases.holding("run-x", 0):
        assert leases.live(["run-x"]) == {"run-x": 0}


def test_a_renewal_that_failed_is_tried_again(
    store: EventStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A database blip during a long step does not end the renewals (the lease would run
    out while the step runs, and another worker take it beside it)."""
    leases = Leases(store, ttl=0.3)
    calls: list[str] = []
    renew = Leases._renew

    def blip(self: Leases, held: Mapping[str, str]) -> set[str]:
        calls.extend(held.values())
        if len(calls) == 1:
            raise OSError("connection reset")
        return renew(self, held)

    monkeypatch.setattr(Leases, "_renew", blip)
    with leases.holding("run-x", 0):
        deadline = time.monotonic() + 30
        while len(calls) < 3:
            assert time.monotonic() < deadline, f"renewed {len(calls)} time(s) only"
            time.sleep(0.02)


def test_a_session_this_process_runs_keeps_its_run_when_its_renewals_come_late(
    store: EventStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past its lease's end (renewals starved on a busy machine), a session is alive as
    long as its process runs it: a take there finds the run taken; another process's take,
    which cannot know, takes it over."""
    here, elsewhere = Leases(store, ttl=5.0), Leases(store, ttl=5.0)
    stuck = utcnow()
    monkeypatch.setattr(lease_module, "utcnow", lambda: stuck)
    with here.holding("run-s", 0, session=True) as session:
        session.moved_to(3)
        monkeypatch.setattr(lease_module, "utcnow", lambda: stuck + timedelta(seconds=6))
        with pytest.raises(Taken):
            with here.holding("run-s", 3, session=True):
                pass
        with pytest.raises(Taken):
            with here.holding("run-s", 4):  # a later step's take, past the session's lease
                pass
        with elsewhere.holding("run-s", 3, session=True):
            with pytest.raises(lease_module.LeaseLost):
                session.moved_to(4)


def test_a_session_taken_over_is_told_at_its_next_renewal(store: EventStore) -> None:
    """Another take that has the run stops the session through its renewals, before it
    sends again: it must not keep running its agent in a workspace being rebuilt."""
    leases = Leases(store, ttl=0.3)
    told = threading.Event()
    with leases.holding("run-t", 0, session=True) as session:
        session.on_lost(told.set)
        with lease_engine(store).begin() as conn:  # another worker's take of the run
            conn.execute(STEP_LEASES.update().values(holder="@another-take"))
        assert told.wait(timeout=30), "the session was never told"
    late = threading.Event()
    session.on_lost(late.set)  # said already: called at once
    assert late.is_set()


def test_one_renewal_moves_every_lease_of_a_process_and_names_those_lost(
    store: EventStore,
) -> None:
    leases = Leases(store, ttl=5.0)
    with leases.holding("run-1", 0) as _one, leases.holding("run-2", 0) as _two:
        with lease_engine(store).connect() as conn:
            tokens = dict(conn.execute(select(STEP_LEASES.c.stream, STEP_LEASES.c.holder)).all())
            before = dict(
                conn.execute(select(STEP_LEASES.c.stream, STEP_LEASES.c.expires_at)).all()
            )
        with lease_engine(store).begin() as conn:
            conn.execute(
                STEP_LEASES.update().where(STEP_LEASES.c.stream == "run-2").values(holder="x")
            )
        held = {tokens["run-1"]: "run-1", tokens["run-2"]: "run-2", "stale": "run-1"}
        time.sleep(0.01)
        assert leases._renew(held) == {tokens["run-1"]}
        with lease_engine(store).connect() as conn:
            after = dict(conn.execute(select(STEP_LEASES.c.stream, STEP_LEASES.c.expires_at)).all())
        assert after["run-1"] > before["run-1"] and after["run-2"] == before["run-2"]


def test_a_lease_an_older_labrxiv_marked_sent_still_means_the_step_is_done(
    store: EventStore,
) -> None:
    leases = Leases(store, ttl=5.0)
    with leases.holding("run-old", 0):  # makes the table
        pass
    with lease_engine(store).begin() as conn:
        conn.execute(
            STEP_LEASES.update()
            .where(STEP_LEASES.c.stream == "run-old")
            .values(version=7, holder="sent", expires_at=utcnow() + timedelta(seconds=5))
        )
    with pytest.raises(Taken):
        with Leases(store, ttl=5.0).holding("run-old", 7):
            pass


def test_a_lease_is_taken_while_the_log_is_being_written(store_url: str) -> None:
    """A lab's lease take does not wait for another lab's append: on SQLite, a write
    transaction holds the file's one writer, and every step's take queued behind every
    append (a median 25 ms each with a hundred llm labs). The leases are in a file of
    their own there; on PostgreSQL, rows are written side by side."""
    store = EventStore.from_url(store_url)
    leases = Leases(store, ttl=5.0)
    took: list[dict[str, int]] = []

    def take() -> None:
        with leases.holding("run-w", 0):
            took.append(leases.live(["run-w"]))

    with writing(store.engine):  # an append under way
        taker = threading.Thread(target=take)
        taker.start()
        taker.join(timeout=30)  # a few milliseconds, unless it waits for the append
        assert took == [{"run-w": 0}], "the lease take waited for the log's writer"
    store.engine.dispose()
