"""The wait before a model's next attempt, in a lab step: the gateway's own wait (one
retry policy, `workers/retry.py`), counted from the recorded failure, and asked of the
bus as a delayed task retry instead of a sleep that holds a worker (code reading, item 6:
the step slept up to 60 s in its task with its own backoff, ignoring the gateway's)."""

from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from fake_server import FakeServer
from fake_server import rate_limited as rate_limited_reply
from fake_server import server_error as server_error_reply

from events import Event
from events.ids import new_id, utcnow
from events.payloads import LlmConfig, ModelCalled, ModelFailed, RunStarted
from labrxiv.settings import load_settings
from labrxiv.wiring import open_store, worker_context
from tests.sent_bus import Sent
from workers.context import WorkerContext
from workers.errors import RetryLater
from workers.lab.step import lab_step
from workers.llm import Gateway, ModelRequest, PriceTable
from workers.llm import driver as llm_step_module  # where a step waits in place

STREAM = "run-wait-0"


@pytest.fixture
def gateway() -> Iterator[Gateway]:
    """A gateway with settings of its own: retry-after honoured up to 5 s."""
    made = Gateway(
        "http://127.0.0.1:9/v1", None, PriceTable.load(), backoff_base=0.5, max_retry_after_s=5
    )
    yield made
    made.close()


@pytest.fixture
def now(monkeypatch: pytest.MonkeyPatch) -> datetime:
    """The step's clock, stopped: the wait it asks for is exact, however long the step
    takes to start (a test that read the clock passed 0.18 s late once on a busy machine)."""
    stopped = utcnow()
    monkeypatch.setattr(llm_step_module, "utcnow", lambda: stopped)
    return stopped


@pytest.fixture
def ctx(tmp_path: Path, gateway: Gateway) -> Iterator[WorkerContext]:
    settings = load_settings(data_dir=tmp_path / "data")
    store = open_store(settings)
    made = worker_context(settings, store, Sent())
    made.labs.gateways = lambda _url: gateway
    yield made
    store.engine.dispose()


def _failed_call(
    ctx: WorkerContext, gateway: Gateway, retry_after: float | None, ago: float, now: datetime
) -> str:
    """Record a run whose first model call failed `ago` seconds before `now`; its call id."""
    config = LlmConfig(model="gpt-4o-mini")
    started = RunStarted(task="continual-digits", lab="lab-0", policy="llm", llm=config)
    request = ModelRequest(f"{STREAM}:0", "gpt-4o-mini", [{"role": "user", "content": "go"}])
    prepared = gateway.prepare(request)
    failed = ModelFailed(
        call_id=prepared.called.call_id,
        error="rate_limited" if retry_after is not None else "server_error",
        status_code=429 if retry_after is not None else 500,
        retry_after_s=retry_after,
        latency_s=0.01,
        detail="try again",
        will_retry=True,
    )
    failed_at = now - timedelta(seconds=ago)
    at = [failed_at - timedelta(seconds=1), failed_at - timedelta(seconds=1), failed_at]
    events = [
        Event(id=new_id(), stream=STREAM, version=v, occurred_at=t, actor="lab-0", payload=p)
        for v, (p, t) in enumerate(zip([started, prepared.called, failed], at, strict=True))
    ]
    ctx.store.append(events, prepared.blobs)
    return prepared.called.call_id


def test_the_step_asks_to_be_run_when_the_gateways_wait_is_over(
    ctx: WorkerContext, gateway: Gateway, now: datetime, monkeypatch: pytest.MonkeyPatch
) -> None:
    slept: list[float] = []
    monkeypatch.setattr(llm_step_module.time, "sleep", slept.append)
    _failed_call(ctx, gateway, retry_after=3600, ago=0, now=now)

    with pytest.raises(RetryLater) as asked:
        lab_step(ctx, STREAM, 2, final=False)

    # The gateway's cap (5 s), not the step's own 60 s; no sleep, nothing published.
    assert asked.value.delay_s == 5.0
    assert slept == [] and ctx.bus.published() == []  # type: ignore[attr-defined]


def test_the_wait_is_counted_from_the_failure_and_is_the_gateways(
    ctx: WorkerContext, gateway: Gateway, now: datetime
) -> None:
    """A 500 with no retry-after: the gateway's backoff for that call (the very number it
    logged when the call failed), less what has passed since the failure."""
    wait = gateway.retry_wait(1, None, f"{STREAM}:0/1")  # the same for the same call
    assert wait == gateway.retry_wait(1, None, f"{STREAM}:0/1")
    assert 0 < wait <= 1.0  # attempt 1 of a 0.5 s base: a draw in [0, 1]
    _failed_call(ctx, gateway, retry_after=None, ago=wait / 2, now=now)

    with pytest.raises(RetryLater) as asked:
        lab_step(ctx, STREAM, 2, final=False)
    assert asked.value.delay_s == pytest.approx(wait / 2, abs=1e-6)


def test_a_wait_already_over_writes_the_next_attempt_at_once(
    ctx: WorkerContext, gateway: Gateway, now: datetime
) -> None:
    _failed_call(ctx, gateway, retry_after=2, ago=3, now=now)
    lab_step(ctx, STREAM, 2, final=False)
    (called,) = ctx.bus.published()  # type: ignore[attr-defined]
    assert called["payload"]["type"] == "model.called" and called["version"] == 3
    assert called["payload"]["attempt"] == 2
    assert called["payload"]["call_id"] == f"{STREAM}:0/2"


def test_a_bus_that_runs_nothing_later_waits_in_place(
    ctx: WorkerContext, gateway: Gateway, now: datetime, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The in-process bus has no delayed retry (`final`): the step waits the same wait
    there, then writes the next attempt."""
    slept: list[float] = []
    monkeypatch.setattr(llm_step_module.time, "sleep", slept.append)
    _failed_call(ctx, gateway, retry_after=3600, ago=0, now=now)

    lab_step(ctx, STREAM, 2)

    assert slept == [5.0]
    (called,) = ctx.bus.published()  # type: ignore[attr-defined]
    assert isinstance(ModelCalled.model_validate(called["payload"]), ModelCalled)
    assert called["payload"]["attempt"] == 2


def test_the_step_and_the_gateway_wait_the_same(
    server: FakeServer, make_gateway: Callable[..., Gateway]
) -> None:
    """One retry policy: what `send` says to wait (and `workers.llm.in_place` waits) is what a
    lab step waits for the same failure, in whichever process it runs."""
    server.queue(server_error_reply(503), rate_limited_reply(retry_after=7))
    gateway = make_gateway(max_attempts=3, backoff_base=0.25, max_retry_after_s=6)
    request = ModelRequest("run-s:4", "gpt-4o-mini", [{"role": "user", "content": "go"}])
    for attempt, retry_after in ((1, None), (2, 7.0)):
        outcome = gateway.send(gateway.prepare(request, attempt))
        assert isinstance(outcome.event, ModelFailed)
        assert outcome.event.retry_after_s == retry_after
        call_id = f"run-s:4/{attempt}"
        again = make_gateway(backoff_base=0.25, max_retry_after_s=6)  # another process
        assert outcome.retry_in_s == again.retry_wait(attempt, retry_after, call_id)
    assert outcome.retry_in_s == 6.0  # the provider's 7 s, capped by this gateway
