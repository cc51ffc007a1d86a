"""The embedded bus stopped at Ctrl-C (`LocalBus.abandon`): what a running task sends is
refused (`BusStopped`), so the task knows it was not sent; it ends there, quietly."""

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
import sqlalchemy.exc

from events import Event
from events.ids import new_id, utcnow
from events.payloads import Payload, RunStarted, ToolInvoked
from labrxiv.interrupt import stop_embedded
from labrxiv.settings import load_settings
from labrxiv.wiring import open_embedded, open_store, worker_context
from runstate import RunState
from tests.run_events import run_started
from workers.bus.base import BusStopped
from workers.bus.local import LocalBus
from workers.context import WorkerContext
from workers.handlers import run_handler
from workers.lab import step as step_module
from workers.lab.step import LAB_STEP_TASK, lab_step
from workers.recorder import record_message
from workers.retry import RetryPolicy

STREAM = "run-stopped-0"


@pytest.fixture
def ctx(tmp_path: Path) -> Iterator[WorkerContext]:
    settings = load_settings(data_dir=tmp_path / "data")
    store = open_store(settings)
    bus = LocalBus(threads=1)
    made = worker_context(settings, store, bus)
    bus.start(lambda task, args: run_handler(made, task, args))
    started = RunStarted(task="t", lab="lab-a", policy="search")
    store.append(
        [Event(id=new_id(), stream=STREAM, version=0, occurred_at=utcnow(), payload=started)]
    )
    yield made
    bus.close()
    store.engine.dispose()


def test_a_step_taken_as_the_bus_stops_gives_its_step_back(
    ctx: WorkerContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its events were dropped: had its lease said they were sent, `labrxiv resume` would
    find the step done and leave the run to the reaper (up to two stall bounds)."""
    inside, release = threading.Event(), threading.Event()

    def work(
        _ctx: WorkerContext, _state: RunState, version: int, _final: bool, _emitter: object
    ) -> tuple[list[Payload], dict[str, bytes]]:
        inside.set()
        assert release.wait(30), "the test never released the step"
        return [ToolInvoked(call_id=f"call-{version}", tool="bash", args={})], {}

    monkeypatch.setattr(step_module, "_act", work)
    bus = ctx.bus
    assert isinstance(bus, LocalBus)
    bus.send(LAB_STEP_TASK, STREAM, 0)
    assert inside.wait(30), "the step never began"
    stopping = threading.Thread(target=bus.abandon)  # waits for the running step
    stopping.start()
    deadline = time.monotonic() + 30
    while not bus.stopped:  # Ctrl-C came while the step was being taken
        assert time.monotonic() < deadline, "the bus never stopped"
        time.sleep(0.01)
    release.set()
    stopping.join(30)
    assert not stopping.is_alive()
    assert ctx.leases is not None and ctx.leases.live([STREAM]) == {}  # given back
    assert bus.failures == []  # stopping is not a task's failure
    assert [e.version for e in ctx.store.read_stream(STREAM)] == [0]
    with pytest.raises(BusStopped, match="stopped"):
        bus.send(LAB_STEP_TASK, STREAM, 0)


def test_a_batch_recorded_as_the_bus_stops_keeps_its_dead_letters(ctx: WorkerContext) -> None:
    """The recorder's reactions cannot be sent once the bus stopped; the batch is still
    recorded whole: its valid events appended, its invalid ones dead-lettered (their only
    record), the reactions left to the next catch-up (`labrxiv resume`)."""
    bus = ctx.bus
    assert isinstance(bus, LocalBus)
    bus.abandon()
    started = RunStarted(task="t", lab="lab-b", policy="search")
    good = Event(
        id=new_id(), stream="run-stopped-1", version=0, occurred_at=utcnow(), payload=started
    )
    other = Event(
        id=new_id(), stream="run-stopped-2", version=0, occurred_at=utcnow(), payload=started
    )
    events = [orjson.loads(e.model_dump_json()) for e in (good, other)]
    bad = dict(events[0], id=str(new_id()), stream="run-stopped-3", payload={"type": "nope"})
    outcome = record_message(ctx, orjson.dumps({"events": [*events, bad]}).decode())
    assert (outcome.appended, outcome.dead) == (2, 1)
    assert [len(ctx.store.read_stream(s)) for s in ("run-stopped-1", "run-stopped-2")] == [1, 1]
    assert len(ctx.store.dead_letters()) == 1


def test_a_stopped_embedded_system_leaves_no_lease_on_its_runs(tmp_path: Path) -> None:
    """A step that sent its events just before Ctrl-C marked its lease sent, and the
    recording of those events was dropped with the queue: `labrxiv resume` (within the
    lease's time) would find the step done and leave the run to the reaper. This process
    was the runs' only worker and nothing of it runs any more: their leases go."""
    system = open_embedded(load_settings(data_dir=tmp_path / "data"), threads=1)
    try:
        started = RunStarted(task="t", lab="lab-c", policy="search")
        first = Event(
            id=new_id(),
            stream="run-left-0",
            version=0,
            occurred_at=utcnow(),
            correlation_id="c-left",
            payload=started,
        )
        system.store.append([first])
        leases = system.ctx.leases
        assert leases is not None
        with leases.holding("run-left-0", 0):
            pass  # its events sent (and dropped)
        assert leases.live(["run-left-0"]) == {"run-left-0": 0}
        left = stop_embedded(system, "Ctrl-C in a test")
        assert [item.runs for item in left] == [["run-left-0"]]
        assert leases.live(["run-left-0"]) == {}
    finally:
        system.close()


def test_a_second_ctrl_c_while_steps_end_still_records_what_was_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ "Ctrl-C again to quit now" came while the steps being taken were let end: nothing
    was recorded, and `campaigns` and `runs` showed the stopped runs running."""
    system = open_embedded(load_settings(data_dir=tmp_path / "data"), threads=1)
    try:
        system.store.append([run_started("run-c-again-0", "c-again")])

        def interrupted() -> int:
            raise KeyboardInterrupt  # the second Ctrl-C, while the steps end

        monkeypatch.setattr(system.bus, "abandon", interrupted)
        left = stop_embedded(system, "Ctrl-C in a test")
        assert [item.runs for item in left] == [["run-c-again-0"]]
        recorded = system.store.read_records(types=["campaign.interrupted"])
        assert [r.payload["runs"] for r in recorded] == [["run-c-again-0"]]
        assert system.bus.stopped  # and quit: closing it waits for no step
    finally:
        monkeypatch.undo()
        system.close()


def test_a_second_take_waiting_in_place_takes_nothing_once_the_bus_stopped(
    ctx: WorkerContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its first take, stopped, gave its lease back: the second would take the lease and
    run the whole step (tools, a grader, a paid model call) only to have it refused."""
    leases = ctx.leases
    assert leases is not None
    bus = ctx.bus
    assert isinstance(bus, LocalBus)
    takes: list[int] = []

    def work(
        _ctx: WorkerContext, _state: RunState, version: int, _final: bool, _emitter: object
    ) -> tuple[list[Payload], dict[str, bytes]]:
        takes.append(version)
        return [], {}

    monkeypatch.setattr(step_module, "_act", work)
    waits: list[float] = []

    def wait(seconds: float) -> None:  # meanwhile: Ctrl-C, and the first take gives back
        waits.append(seconds)
        bus.abandon()
        with pytest.raises(BusStopped):
            bus.send(LAB_STEP_TASK, STREAM, 0)
        leases.forget([STREAM])

    monkeypatch.setattr(step_module, "_wait", wait)
    with leases.holding(STREAM, 0):  # the first take, running
        with pytest.raises(BusStopped, match="not taken"):
            lab_step(ctx, STREAM, 0, final=True)
    assert waits and takes == []


def test_a_transient_fault_is_retried_without_a_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The database busy or away says nothing of the task: it runs again after the retry
    policy's wait, said in one line with no traceback, and is no failure."""
    runs: list[str] = []

    def runner(task: str, _args: tuple[object, ...]) -> None:
        runs.append(task)
        if len(runs) < 3:
            raise sqlalchemy.exc.OperationalError("BEGIN", {}, Exception("database is locked"))

    bus = LocalBus(threads=1, retry=RetryPolicy(base_s=0.001))
    bus.start(runner)
    with caplog.at_level("INFO", logger="workers.bus.local"):
        bus.send("labrxiv.record", "{}")
        bus.join()
    bus.close()
    assert runs == ["labrxiv.record"] * 3
    assert bus.failures == []
    said = [r for r in caplog.records if r.name == "workers.bus.local"]
    assert len(said) == 2 and all(r.exc_info is None for r in said), said
    assert all("database is locked" in r.getMessage() for r in said)


def test_a_handler_bug_is_not_retried() -> None:
    runs: list[str] = []

    def runner(task: str, _args: tuple[object, ...]) -> None:
        runs.append(task)
        raise ValueError("a bug")

    bus = LocalBus(threads=1)
    bus.start(runner)
    bus.send("labrxiv.record", "{}")
    bus.join()
    bus.close()
    assert runs == ["labrxiv.record"]
    assert [(task, str(exc)) for task, exc in bus.failures] == [("labrxiv.record", "a bug")]
