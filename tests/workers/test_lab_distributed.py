"""A campaign on the real Redis and PostgreSQL, with labs stepped by separate worker processes;
and a worker SIGKILLed in the middle of a step: the run finishes on another worker with no
duplicated events."""

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from events import EventStore
from events.payloads import ReviewConfig
from labrxiv.reacting import open_reacting
from labrxiv.settings import load_settings
from labrxiv.wiring import open_bus
from workers.lab.campaign import CampaignPlan, start_campaign

pytestmark = [pytest.mark.redis, pytest.mark.postgres, pytest.mark.slow]

LABRXIV = Path(sys.executable).with_name("labrxiv")
VISIBILITY = 4


class Worker:
    """`labrxiv worker` in its own session, so a kill takes its pool with it."""

    def __init__(self, env: dict[str, str], log: Path, queues: str, concurrency: int) -> None:
        self.env, self.log, self.queues, self.concurrency = env, log, queues, concurrency
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> "Worker":
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(
                [str(LABRXIV), "worker", "-Q", self.queues, "-c", str(self.concurrency)],
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        return self

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)


@pytest.fixture
def workers() -> Iterator[list[Worker]]:
    started: list[Worker] = []
    try:
        yield started
    finally:
        for worker in started:
            worker.kill()


@pytest.fixture
def env(redis_url: str, pg_url: str, tmp_path: Path) -> dict[str, str]:
    values = dict(os.environ)
    values.update(
        LABRXIV_REDIS_URL=redis_url,
        LABRXIV_DATABASE_URL=pg_url,
        LABRXIV_VISIBILITY_TIMEOUT=str(VISIBILITY),
        LABRXIV_DATA_DIR=str(tmp_path / "data"),
    )
    return values


def _wait(
    what: str, ready: Callable[[], bool], logs: list[Path], seconds: float = 120, every: float = 0.3
) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if ready():
            return
        time.sleep(every)
    tails = "\n".join(p.read_text(errors="replace")[-3000:] for p in logs if p.exists())
    pytest.fail(f"not within {seconds:.0f}s: {what}\n{tails}")


def _start(env: dict[str, str], plan: CampaignPlan) -> tuple[str, list[str], EventStore]:
    settings = load_settings(
        redis_url=env["LABRXIV_REDIS_URL"],
        database_url=env["LABRXIV_DATABASE_URL"],
        data_dir=Path(env["LABRXIV_DATA_DIR"]),
    )
    store = EventStore.from_url(settings.store_url)
    bus = open_bus(settings)
    try:
        campaign, runs = start_campaign(bus, plan)
    finally:
        bus.close()
    return campaign, runs, store


def _assert_clean(store: EventStore, runs: list[str]) -> None:
    records = list(store.iter_records())
    ids = [r.id for r in records]
    assert len(ids) == len(set(ids))
    for stream in runs:
        events = store.read_stream(stream)
        assert [e.version for e in events] == list(range(len(events)))
        assert events[-1].type == "run.finished" and events[-1].payload.reason == "done"
        invoked = [e.payload.call_id for e in events if e.type == "tool.invoked"]
        returned = [e.payload.call_id for e in events if e.type == "tool.returned"]
        assert invoked == returned, "every tool call has exactly one outcome"
        attempts = [e.payload.attempt for e in events if e.type == "experiment.scored"]
        assert attempts == list(range(1, len(attempts) + 1))


def _finished(store: EventStore, campaign: str) -> Callable[[], bool]:
    def done() -> bool:
        return any(e.type == "campaign.finished" for e in store.read_stream(f"campaign-{campaign}"))

    return done


def _evaluating_or_over(store: EventStore, stream: str, campaign: str) -> Callable[[], bool]:
    """Whether `stream`'s next step runs the grader, or its campaign is over."""
    over = _finished(store, campaign)

    def ready() -> bool:
        events = store.read_stream(stream)
        # config.json written, evaluate not yet invoked: the next step runs the grader
        at = bool(events) and events[-1].type == "tool.returned" and len(events) >= 6
        return at or over()

    return ready


def test_campaign_on_redis_and_postgres_with_separate_workers(
    env: dict[str, str], workers: list[Worker], tmp_path: Path
) -> None:
    logs = [tmp_path / "recorder.log", tmp_path / "steps.log", tmp_path / "reviews.log"]
    workers.append(Worker(env, logs[0], "events", 1).start())
    workers.append(Worker(env, logs[1], "steps", 2).start())
    workers.append(Worker(env, logs[2], "reviews", 1).start())
    plan = CampaignPlan(
        task="continual-digits",
        labs=2,
        papers=1,
        mode="archive",
        seed=5,
        attempts=2,
        review=ReviewConfig(),
    )
    campaign, runs, store = _start(env, plan)
    _wait("the campaign finishes", _finished(store, campaign), logs)
    _assert_clean(store, runs)
    papers = store.read_records(limit=100, types=["paper.submitted"])
    assert len(papers) == 2
    # Each paper was reviewed on the reviews queue, by its own worker process, and
    # decided before the campaign ended.
    decided = store.read_records(limit=100, types=["paper.decided"], correlation=campaign)
    assert sorted(d.payload["paper_id"] for d in decided) == sorted(
        p.payload["paper_id"] for p in papers
    )
    end = store.read_records(limit=1, types=["campaign.finished"], correlation=campaign)
    assert all(d.position < end[0].position for d in decided)
    assert "labrxiv.review_paper" in logs[2].read_text()


STALL = 3.0
"""The stall bound of the reaper this test runs, and of the workers' step leases."""


def test_a_run_survives_its_worker_killed_mid_step(
    env: dict[str, str], workers: list[Worker], tmp_path: Path
) -> None:
    env = {**env, "LABRXIV_STALL_SECONDS": str(STALL)}
    logs = [tmp_path / "recorder.log", tmp_path / "steps-a.log", tmp_path / "steps-b.log"]
    workers.append(Worker(env, logs[0], "events", 1).start())
    doomed = Worker(env, logs[1], "steps", 1).start()
    workers.append(doomed)
    # The run's steps take ~10-250 ms each and the look below polls: on a loaded machine
    # the run finished between two looks (a CI run then waited 120 s for a state that
    # could no longer come). A run that finished before a look saw it mid-way is left
    # be, and a new campaign's run is looked at instead.
    for seed in range(9, 14):
        plan = CampaignPlan(
            task="continual-digits", labs=1, papers=1, mode="isolated", seed=seed, attempts=3
        )
        campaign, (stream,), store = _start(env, plan)
        ready = _evaluating_or_over(store, stream, campaign)
        _wait("the run reaches an evaluate step", ready, logs, every=0.05)
        if not _finished(store, campaign)():
            break
    else:
        pytest.fail("five runs finished before a look saw one mid-way")
    # Killed as soon as the run's next step is the grader's: usually while that step
    # runs, sometimes just before or after it. Whichever it was, the run must finish on
    # the other worker with no event twice; no assertion rests on the kill's timing
    # (a sleep before the kill raced a fast step: CODE-READING item 10).
    doomed.kill()

    workers.append(Worker(env, logs[2], "steps", 1).start())
    # A kill in kombu's window between BRPOP and the unacked record loses the message
    # of the run's next step: neither queued nor unacknowledged, it never comes back
    # (docs/events.md, "Where a message can still be lost"). The reaper is what finds
    # such a run, as `labrxiv reactor` does beside the workers: without it this test
    # failed whenever the kill landed there (once in a CI run).
    settings = load_settings(
        redis_url=env["LABRXIV_REDIS_URL"],
        database_url=env["LABRXIV_DATABASE_URL"],
        data_dir=Path(env["LABRXIV_DATA_DIR"]),
        stall_seconds=STALL,
    )
    reacting = open_reacting(settings)
    stop = threading.Event()
    follower = threading.Thread(target=reacting.follow, args=(0.2, stop), daemon=True)
    follower.start()
    try:
        _wait("the campaign finishes on the other worker", _finished(store, campaign), logs)
    finally:
        stop.set()
        follower.join(timeout=30)
        reacting.close()
    _assert_clean(store, [stream])
