"""What both benchmarks share: throw-away databases, simulated events, stored-row tuples.

The benchmarks own their databases: PostgreSQL database `labrxiv_bench` (dropped and
created again for every measurement) and SQLite files in a temporary directory.
"""

import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import psycopg
import redis

from events import Event, EventStore
from tests.simulated import simulated_run

PG_ADMIN = os.environ.get("LABRXIV_BENCH_PG", "postgresql://postgres@127.0.0.1:5432/postgres")
"""A PostgreSQL URL with the right to create and drop databases."""
PG_DATABASE = "labrxiv_bench"
REDIS_BASE = os.environ.get("LABRXIV_BENCH_REDIS", "redis://127.0.0.1:6379")
START = datetime(2026, 1, 1, tzinfo=UTC)
BACKENDS = ("postgres", "sqlite")

INSERT_COLUMNS = (
    "id, stream, version, type, schema_version, occurred_at, recorded_at, "
    "causation_id, correlation_id, actor, payload"
)


def fresh_database(backend: str, workdir: Path, name: str) -> str:
    """An empty database for one measurement, with the log's tables; returns its URL."""
    if backend == "postgres":
        with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{PG_DATABASE}" WITH (FORCE)')
            admin.execute(f'CREATE DATABASE "{PG_DATABASE}"')
        base = PG_ADMIN.split("://", 1)[1].rsplit("/", 1)[0]
        url = f"postgresql+psycopg://{base}/{PG_DATABASE}"
    else:
        path = workdir / f"{name}.db"
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        url = f"sqlite:///{path}"
    store = EventStore.from_url(url)
    store.engine.dispose()
    return url


def drop_database(backend: str) -> None:
    """Remove the PostgreSQL bench database (SQLite files go with their directory)."""
    if backend == "postgres":
        with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{PG_DATABASE}" WITH (FORCE)')


def simulated_events(count: int, prefix: str, attempts: int = 5) -> list[Event]:
    """`count` events of simulated runs (17 events a run at 5 attempts), in publish order."""
    events: list[Event] = []
    index = 0
    while len(events) < count:
        events.extend(
            simulated_run(
                f"{prefix}{index}", START, attempts=attempts, seed=index, campaign="bench"
            )
        )
        index += 1
    return events[:count]


def event_rows(events: Sequence[Event], recorded_at: datetime) -> list[tuple[Any, ...]]:
    """The tuples the store writes for `events`, in `INSERT_COLUMNS` order."""
    return [
        (
            e.id,
            e.stream,
            e.version,
            e.payload.type,
            e.schema_version,
            e.occurred_at,
            recorded_at,
            e.causation_id,
            e.correlation_id,
            e.actor,
            orjson.dumps(e.payload.model_dump(mode="json")).decode(),
        )
        for e in events
    ]


def chunks(items: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    """`items` in consecutive slices of `size`."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


def whole_run_messages(events: Sequence[Event], batch: int) -> list[list[Event]]:
    """`events` packed into messages of at most `batch` events that never split a run.

    A lab publishes its own run's events in order, and a run's next events are only
    produced after its last ones are recorded; so a stream never has two messages in
    flight at once. Splitting runs across messages would break that for a worker with
    more than one process (it may record a run's second half first: a conflict).
    Runs longer than `batch` (only at tiny batches) are split.
    """
    runs: list[list[Event]] = []
    for event in events:
        if runs and runs[-1][0].stream == event.stream:
            runs[-1].append(event)
        else:
            runs.append([event])
    messages: list[list[Event]] = []
    current: list[Event] = []
    for run in runs:
        if len(run) > batch:
            if current:
                messages.append(current)
                current = []
            messages.extend(list(c) for c in chunks(run, batch))
            continue
        if len(current) + len(run) > batch:
            messages.append(current)
            current = []
        current.extend(run)
    if current:
        messages.append(current)
    return messages


def sqlite_row(row: tuple[Any, ...]) -> tuple[Any, ...]:
    """A stored-row tuple in the text forms SQLAlchemy's SQLite types read back."""
    return (
        row[0].hex,
        *row[1:5],
        _sqlite_time(row[5]),
        _sqlite_time(row[6]),
        row[7].hex if row[7] else None,
        *row[8:],
    )


def _sqlite_time(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")


def sqlite_connect(url: str) -> sqlite3.Connection:
    """A raw connection with the pragmas the store's engine sets (WAL, synchronous=NORMAL)."""
    conn = sqlite3.connect(url.removeprefix("sqlite:///"), isolation_level=None, timeout=60)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    return conn


def pg_connect(url: str) -> psycopg.Connection:
    """A raw psycopg connection to the bench database."""
    return psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://"))


class Timer:
    """Wall-clock seconds of a `with` block, in `.seconds`."""

    def __enter__(self) -> "Timer":
        self.started = time.perf_counter()
        self.seconds = 0.0
        return self

    def __exit__(self, *_exc: object) -> None:
        self.seconds = time.perf_counter() - self.started


_TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> list[str] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text.rsplit(")", 1)[1].split()


def process_cpu(pid: int) -> float:
    """CPU seconds (user + system) used so far by process `pid`, 0 once it is gone."""
    fields = _stat(pid)
    return (int(fields[11]) + int(fields[12])) / _TICK if fields else 0.0


def tree_cpu(root: int) -> float:
    """CPU seconds used so far by `root` and its live descendants (a worker and its pool)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (fields := _stat(int(entry.name))):
            parents[int(entry.name)] = int(fields[1])
    tree, frontier = {root}, [root]
    while frontier:
        parent = frontier.pop()
        children = [pid for pid, ppid in parents.items() if ppid == parent]
        tree.update(children)
        frontier.extend(children)
    return sum(process_cpu(pid) for pid in tree)


def backend_cpu(pids: Sequence[int]) -> dict[int, float]:
    """CPU seconds used so far by each PostgreSQL backend process of `pids` (same machine)."""
    return {pid: process_cpu(pid) for pid in pids}


def database_backends(url: str, exclude: Sequence[int] = ()) -> list[int]:
    """Pids of the server processes connected to the bench database, but `exclude`."""
    with psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://")) as conn:
        rows = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
            " AND pid <> pg_backend_pid()"
        ).fetchall()
    return [row[0] for row in rows if row[0] not in exclude]


@dataclass
class Measurement:
    """One line of a benchmark table; CPU figures are seconds over the measured window."""

    backend: str
    what: str
    events: int
    seconds: float
    client_cpu: float | None = None
    """The process doing the work: the bench itself for baselines, the worker for the path."""
    database_cpu: float | None = None
    """PostgreSQL server processes serving the work (not WAL writer, checkpointer)."""
    publisher_cpu: float | None = None

    @property
    def rate(self) -> float:
        return self.events / self.seconds if self.seconds else float("nan")


def _per_event(cpu: float | None, events: int) -> str:
    return "-" if cpu is None else f"{cpu / events * 1e6:.1f}"


def print_table(title: str, rows: Sequence[Measurement], note: str) -> None:
    """The measurements as an aligned table: events/s, and CPU microseconds per event."""
    print(f"\n{title}")
    width = max([len(r.what) for r in rows] + [4])
    publisher = any(r.publisher_cpu is not None for r in rows)
    print(
        f"{'backend':<9} {'what':<{width}} {'events':>8} {'seconds':>8} {'events/s':>9}"
        f" {'client µs/ev':>12} {'db µs/ev':>9}" + (f" {'pub µs/ev':>9}" if publisher else "")
    )
    for r in rows:
        print(
            f"{r.backend:<9} {r.what:<{width}} {r.events:>8} {r.seconds:>8.2f} {r.rate:>9,.0f}"
            f" {_per_event(r.client_cpu, r.events):>12}"
            f" {_per_event(r.database_cpu, r.events):>9}"
            + (f" {_per_event(r.publisher_cpu, r.events):>9}" if publisher else "")
        )
    print(note)


def machine_cpu() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine so far, all cores (/proc/stat)."""
    fields = [int(f) for f in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return (sum(fields) - idle) / _TICK, sum(fields) / _TICK


@contextmanager
def private_redis(folder: Path) -> Iterator[str]:
    """A `redis-server` of the bench's own on a free port, nothing on disk; yields its URL."""
    binary = shutil.which("redis-server")
    if binary is None:
        raise SystemExit("redis-server is not installed (Debian: apt-get install redis-server)")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    server = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        + ["--dir", str(folder), "--logfile", str(folder / "redis.log")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    client = redis.Redis(port=port, socket_connect_timeout=1)
    try:
        for _ in range(100):
            try:
                client.ping()
                break
            except redis.ConnectionError:
                if server.poll() is not None:
                    raise SystemExit(
                        f"redis-server exited at start: {folder / 'redis.log'}"
                    ) from None
                time.sleep(0.05)
        else:
            raise SystemExit(f"redis-server did not answer on port {port} within 5 s")
        yield f"redis://127.0.0.1:{port}"
    finally:
        client.close()
        server.terminate()
        server.wait(timeout=10)


def labrxiv_worker(env: dict[str, str], args: Sequence[str], log: Path) -> subprocess.Popen[bytes]:
    """`labrxiv worker ARGS` in a session of its own (a kill of its group takes its pool)."""
    with log.open("ab") as out:
        return subprocess.Popen(
            [str(Path(sys.executable).with_name("labrxiv")), "worker", *args],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def wait_ready(workers: Sequence[tuple[subprocess.Popen[bytes], Path]], limit: float = 120) -> None:
    """Wait until every worker has logged Celery's `ready.` (needs LABRXIV_LOG_LEVEL=INFO)."""
    deadline = time.monotonic() + limit
    waiting = list(workers)
    while waiting:
        for proc, log in list(waiting):
            text = log.read_text(errors="replace")
            if " ready." in text:
                waiting.remove((proc, log))
            elif proc.poll() is not None:
                raise SystemExit(f"a worker exited at start:\n{text[-3000:]}")
        if waiting and time.monotonic() > deadline:
            raise SystemExit(f"{len(waiting)} worker(s) not ready after {limit:.0f} s")
        time.sleep(0.1)


def stop_worker(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL a worker started by `labrxiv_worker` and its pool (its process group)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(timeout=10)
