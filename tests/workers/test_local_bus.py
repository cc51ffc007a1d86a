"""The embedded bus stopped at Ctrl-C (`LocalBus.abandon`): what a running task sends is
refused (`BusStopped`), so the task knows it was not sent; it ends there, quietly."""

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from events import Event
from events.ids import new_id, utcnow
from events.payloads import Payload, RunStarted, ToolInvoked
from labrxiv.settings import load_settings
from labrxiv.wiring import open_store, worker_context
from runstate import RunState
from workers.bus.base import BusStopped
from workers.bus.local import LocalBus
from workers.context import WorkerContext
from workers.handlers import run_handler
from workers.lab import step as step_module
from workers.lab.step import LAB_STEP_TASK

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
        _ctx: WorkerContext, _state: RunState, version: int, _final: bool
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
