"""A worker killed in the middle of a model call: the run resumes on another worker from
the log, and the ledger keeps the interrupted call as one of unknown outcome."""

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_server import FakeServer, hang
from sqlalchemy import select
from test_llm_lab import KEY, _cycle

from events import EventStore
from events.payloads import LlmConfig
from labrxiv.settings import load_settings
from labrxiv.wiring import open_bus
from projections.catalogue import all_projectors
from projections.ledger import LEDGER
from projections.runner import ProjectionRunner
from workers.lab.campaign import CampaignPlan, start_campaign

pytestmark = [pytest.mark.redis, pytest.mark.postgres, pytest.mark.slow]

LABRXIV = Path(sys.executable).with_name("labrxiv")


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer(models=("gpt-4o-mini",)) as running:
        yield running


def _worker(env: dict[str, str], log: Path, queues: str) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        return subprocess.Popen(
            [str(LABRXIV), "worker", "-Q", queues, "-c", "4", "-P", "threads"],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def _kill(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


def test_a_run_resumes_after_its_worker_died_mid_call(
    redis_url: str, pg_url: str, tmp_path: Path, server: FakeServer
) -> None:
    env = dict(os.environ)
    env.update(
        LABRXIV_REDIS_URL=redis_url,
        LABRXIV_DATABASE_URL=pg_url,
        LABRXIV_VISIBILITY_TIMEOUT="4",
        LABRXIV_DATA_DIR=str(tmp_path / "data"),
        LABRXIV_LLM_TIMEOUT="60",
        # The killed worker's step lease: the step brought back to the other worker waits
        # for it to run out (`workers.lab.lease`), 6 s here instead of the default 30.
        LABRXIV_STALL_SECONDS="6",
        OPENAI_API_KEY=KEY,
        OPENAI_BASE_URL=server.url,
    )
    server.queue(hang(), *_cycle())
    logs = [tmp_path / "recorder.log", tmp_path / "steps-a.log", tmp_path / "steps-b.log"]
    procs = [_worker(env, logs[0], "events"), _worker(env, logs[1], "steps")]
    try:
        settings = load_settings(
            redis_url=redis_url, database_url=pg_url, data_dir=tmp_path / "data"
        )
        store = EventStore.from_url(settings.store_url)
        plan = CampaignPlan(
            task="continual-digits",
            labs=1,
            papers=1,
            mode="isolated",
            seed=2,
            attempts=3,
            policy="llm",
            llm=LlmConfig(model="gpt-4o-mini"),
        )
        _campaign, (stream,) = start_campaign(open_bus(settings), plan)
        deadline = time.monotonic() + 60
        while not server.completions() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert server.completions(), "the model was never called"
        _kill(procs[1])  # the worker dies while the model holds the call
        procs.append(_worker(env, logs[2], "steps"))

        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            events = store.read_stream(stream)
            if events and events[-1].type == "run.finished":
                break
            time.sleep(0.3)
        else:
            pytest.fail("the run did not finish:\n" + logs[2].read_text()[-3000:])
    finally:
        for proc in procs:
            _kill(proc)

    assert events[-1].payload.reason == "done"
    assert [e.version for e in events] == list(range(len(events)))
    called = [e.payload for e in events if e.type == "model.called"]
    outcomes = {e.payload.call_id for e in events if e.type in ("model.responded", "model.failed")}
    interrupted = [c for c in called if c.call_id not in outcomes]
    assert len(interrupted) == 1 and interrupted[0].attempt == 1
    retried = [c for c in called if c.request_id == interrupted[0].request_id]
    assert [c.attempt for c in retried] == [1, 2]

    ProjectionRunner(store, all_projectors()).catch_up()
    with store.engine.connect() as conn:
        rows = conn.execute(select(LEDGER).where(LEDGER.c.kind == "model")).mappings().all()
    statuses = {row["call_id"]: row["status"] for row in rows}
    assert statuses[interrupted[0].call_id] == "called"
    assert len(rows) == len(called)
