"""The wait before a model's next attempt is counted from the recorded failure, also
when the run was stopped (`run.interrupted`) between the failure and the step that
resumes it: the stop is not the failure (`workers.llm.driver.after_failure`)."""

from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from events import Event
from events.ids import new_id, utcnow
from events.payloads import LlmConfig, ModelFailed, RunStarted
from labrxiv.settings import load_settings
from labrxiv.wiring import open_store, worker_context
from tests.sent_bus import Sent
from workers.context import WorkerContext
from workers.lab import interrupt
from workers.lab.step import lab_step
from workers.llm import Gateway, ModelRequest, PriceTable
from workers.llm import driver as llm_step_module

STREAM = "run-wait-0"


@pytest.fixture
def gateway() -> Iterator[Gateway]:
    made = Gateway(
        "http://127.0.0.1:9/v1", None, PriceTable.load(), backoff_base=0.5, max_retry_after_s=5
    )
    yield made
    made.close()


@pytest.fixture
def ctx(tmp_path: Path, gateway: Gateway) -> Iterator[WorkerContext]:
    settings = load_settings(data_dir=tmp_path / "data")
    store = open_store(settings)
    made = worker_context(settings, store, Sent())
    made.labs.gateways = lambda _url: gateway
    yield made
    store.engine.dispose()


def test_a_wait_over_since_the_failure_is_over_after_a_stop(
    ctx: WorkerContext, gateway: Gateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rate limited with retry-after 2 s, stopped 2 s later, resumed 1 s after that (3 s
    after the failure): the next attempt is written at once, as without the stop."""
    now = utcnow()
    monkeypatch.setattr(llm_step_module, "utcnow", lambda: now)
    config = LlmConfig(model="gpt-4o-mini")
    started = RunStarted(task="continual-digits", lab="lab-0", policy="llm", llm=config)
    request = ModelRequest(f"{STREAM}:0", "gpt-4o-mini", [{"role": "user", "content": "go"}])
    prepared = gateway.prepare(request)
    failed = ModelFailed(
        call_id=prepared.called.call_id,
        error="rate_limited",
        status_code=429,
        retry_after_s=2,
        latency_s=0.01,
        detail="try again",
        will_retry=True,
    )
    failed_at = now - timedelta(seconds=3)
    at = [failed_at - timedelta(seconds=1), failed_at - timedelta(seconds=1), failed_at]
    events = [
        Event(id=new_id(), stream=STREAM, version=v, occurred_at=t, actor="lab-0", payload=p)
        for v, (p, t) in enumerate(zip([started, prepared.called, failed], at, strict=True))
    ]
    ctx.store.append(events, prepared.blobs)
    stopped: datetime = failed_at + timedelta(seconds=2)
    monkeypatch.setattr(interrupt, "utcnow", lambda: stopped)
    assert interrupt.record_interrupted(ctx.store, "c1", [STREAM], "Ctrl-C in labrxiv campaign")

    lab_step(ctx, STREAM, 3, final=False)  # resumed: the step after the stop

    resumed, called = ctx.bus.published()  # type: ignore[attr-defined]
    assert resumed["payload"]["type"] == "run.resumed" and resumed["version"] == 4
    assert called["payload"]["type"] == "model.called" and called["version"] == 5
    assert called["payload"]["attempt"] == 2
