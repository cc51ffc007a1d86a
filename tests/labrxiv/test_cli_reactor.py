"""`labrxiv reactor --once` sends the reactions of what the log holds and `labrxiv reap`
sends the step of a stalled run again, on Redis and PostgreSQL."""

from pathlib import Path

import pytest
import redis
from typer.testing import CliRunner

from events import Event, EventStore
from events.ids import new_id, utcnow
from events.payloads import RunStarted
from labrxiv.cli import app

pytestmark = [pytest.mark.redis, pytest.mark.postgres]


def test_reactor_once_and_reap(
    redis_url: str, pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LABRXIV_REDIS_URL", redis_url)
    monkeypatch.setenv("LABRXIV_DATABASE_URL", pg_url)
    monkeypatch.setenv("LABRXIV_DATA_DIR", str(tmp_path / "data"))
    store = EventStore.from_url(pg_url)
    started = RunStarted(task="continual-digits", lab="lab-0", policy="search")
    store.append(
        [Event(id=new_id(), stream="run-cli", version=0, occurred_at=utcnow(), payload=started)]
    )
    queue = redis.Redis.from_url(redis_url)
    runner = CliRunner()

    first = runner.invoke(app, ["reactor", "--once", "--stall-seconds", "3600"])
    assert first.exit_code == 0, first.output
    assert "reacted to 1 event; sent 0 stalled steps again" in first.output
    assert queue.llen("steps") == 1, "the run's first step was sent"
    again = runner.invoke(app, ["reactor", "--once", "--stall-seconds", "3600"])
    assert "reacted to 0 events" in again.output, "the checkpoint moved: nothing twice"

    reaped = runner.invoke(app, ["reap", "--stall-seconds", "0.001"])
    assert reaped.exit_code == 0, reaped.output
    assert "sent 1 lost step again" in reaped.output
    assert queue.llen("steps") == 2
    store.engine.dispose()
