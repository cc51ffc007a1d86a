"""A prefork worker's metrics: every pool child counts in a file of its own
that the main process sums at each scrape, so the children killed with SIGKILL after
recording still have their events in `labrxiv_events_recorded_total`, which equals the
log's count of each type."""

import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import func, select

from events import EventStore
from events.store import EVENTS
from tests.ports import free_port
from tests.simulated import simulated_run
from workers.app import make_celery
from workers.bus.base import publish
from workers.bus.celery import CeleryBus

LABRXIV = Path(sys.executable).with_name("labrxiv")
START = datetime(2026, 1, 1, tzinfo=UTC)
DEADLINE_S = 180


def children(pid: int) -> set[int]:
    """The processes whose parent is `pid` (from /proc)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue  # gone meanwhile
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:  # field 4, after "(comm)"
            found.add(int(entry.name))
    return found


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"  # a zombie is dead, not yet reaped


def recorded_by_type(text: str) -> dict[str, float]:
    for family in text_string_to_metric_families(text):
        if family.name == "labrxiv_events_recorded":
            return {s.labels["type"]: s.value for s in family.samples if s.name.endswith("_total")}
    return {}


def scrape(port: int, deadline: float) -> str:
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as r:
                return r.read().decode()
        except (urllib.error.URLError, ConnectionError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def wait_until(condition: object, deadline: float, what: str) -> None:
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def log_by_type(store: EventStore) -> dict[str, int]:
    with store.engine.connect() as conn:
        query = select(EVENTS.c.type, func.count()).group_by(EVENTS.c.type)
        return {kind: n for kind, n in conn.execute(query)}


@pytest.fixture
def worker(
    tmp_path: Path, pg_url: str, redis_url: str
) -> Iterator[tuple[subprocess.Popen[bytes], int, Path]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LABRXIV_", "PROMETHEUS_"))}
    env |= {
        "LABRXIV_REDIS_URL": redis_url,
        "LABRXIV_DATABASE_URL": pg_url,
        "LABRXIV_DATA_DIR": str(tmp_path / "data"),
    }
    port, folder = free_port(), tmp_path / "metrics"
    EventStore.from_url(pg_url).engine.dispose()  # the log's tables, before the children race
    with (tmp_path / "worker.log").open("wb") as out:
        process = subprocess.Popen(
            [str(LABRXIV), "worker", "-Q", "events", "-P", "prefork", "-c", "2"]
            + ["--metrics-port", str(port), "--metrics-addr", "127.0.0.1"]
            + ["--metrics-dir", str(folder)],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        yield process, port, folder
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)


@pytest.mark.redis
@pytest.mark.postgres
@pytest.mark.slow
def test_children_killed_with_sigkill_keep_their_counts(
    worker: tuple[subprocess.Popen[bytes], int, Path], pg_url: str, redis_url: str
) -> None:
    process, port, folder = worker
    deadline = time.monotonic() + DEADLINE_S
    scrape(port, deadline)  # the worker's main process serves
    bus = CeleryBus(make_celery(redis_url, visibility_timeout=60))
    store = EventStore.from_url(pg_url)
    first = [list(simulated_run(f"k{i}", START, attempts=2, seed=i)) for i in range(12)]
    for run in first:
        publish(bus, run)
    total = sum(len(run) for run in first)
    wait_until(lambda: store.count() == total, deadline, "the first runs in the log")

    # Kill every pool child that counted something: their counts now live only in files.
    counted = {int(p.stem.rsplit("_", 1)[1]) for p in folder.glob("counter_*.db")}
    killed = children(process.pid) & counted
    assert killed, f"no pool child counted anything: {sorted(counted)}"
    for pid in killed:
        os.kill(pid, signal.SIGKILL)
    wait_until(lambda: not any(alive(pid) for pid in killed), deadline, "the children to die")
    wait_until(lambda: len(children(process.pid) - killed) == 2, deadline, "new pool children")

    second = [list(simulated_run(f"l{i}", START, attempts=2, seed=i)) for i in range(6)]
    for run in second:
        publish(bus, run)
    total += sum(len(run) for run in second)
    wait_until(lambda: store.count() == total, deadline, "the second runs in the log")

    expected = {kind: float(n) for kind, n in log_by_type(store).items()}
    # Counted after the commit, so a scrape may come a moment after the log shows it.
    wait_until(lambda: recorded_by_type(scrape(port, deadline)) == expected, deadline, "counts")
    assert all((folder / f"counter_{pid}.db").exists() for pid in killed)
    assert process.poll() is None, "the worker survived its children"
    store.engine.dispose()
