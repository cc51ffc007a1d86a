# ruff: noqa: F811 - the fixtures `env` and `workers` are imported from test_lab_distributed
"""Separate processes on Redis and PostgreSQL: a run whose step messages were lost with
Redis (restarted empty) is found by the reactor's reaper within its stall bound and
finishes; the time to recover is printed."""

import threading
import time
from pathlib import Path

import pytest
import redis
from test_lab_distributed import (  # noqa: F401 - env and workers are fixtures
    Worker,
    _assert_clean,
    _finished,
    _start,
    _wait,
    env,
    workers,
)

from labrxiv.reacting import open_reacting
from labrxiv.settings import load_settings
from workers.lab.campaign import CampaignPlan

pytestmark = [pytest.mark.redis, pytest.mark.postgres, pytest.mark.slow]

STALL = 3.0


def test_runs_whose_messages_redis_lost_are_reaped_and_finish(
    env: dict[str, str], workers: list[Worker], tmp_path: Path
) -> None:
    logs = [tmp_path / "recorder.log", tmp_path / "steps.log"]
    workers.append(Worker(env, logs[0], "events", 1).start())
    workers.append(Worker(env, logs[1], "steps", 2).start())
    settings = load_settings(
        redis_url=env["LABRXIV_REDIS_URL"],
        database_url=env["LABRXIV_DATABASE_URL"],
        data_dir=Path(env["LABRXIV_DATA_DIR"]),
        stall_seconds=STALL,
    )
    plan = CampaignPlan(
        task="continual-digits", labs=3, papers=1, mode="isolated", seed=2, attempts=3
    )
    campaign, runs, store = _start(env, plan)
    _wait(
        "every run has moved",
        lambda: all(len(store.read_stream(run)) >= 4 for run in runs),
        logs,
    )
    redis.Redis.from_url(env["LABRXIV_REDIS_URL"]).flushall()  # Redis restarted empty
    lost_at = time.monotonic()
    reacting = open_reacting(settings)
    stop = threading.Event()
    follower = threading.Thread(target=reacting.follow, args=(0.2, stop), daemon=True)
    follower.start()
    try:
        _wait(
            "the campaign finishes after Redis lost its messages", _finished(store, campaign), logs
        )
    finally:
        stop.set()
        follower.join(timeout=30)
        reacting.close()
    recovered = time.monotonic() - lost_at
    print(f"\nredis emptied: {len(runs)} runs finished, recovered in {recovered:.1f}s")
    _assert_clean(store, runs)
