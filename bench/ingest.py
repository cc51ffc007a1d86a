"""Ingest benchmark: events/s through the full write path, with the raw baselines beside it.

Full path: a publisher process builds simulated runs (17 events each) and publishes
them (`workers.bus.base.publish` on a `CeleryBus`) to a dedicated Redis database
(default db 12, flushed), in messages of at most `--batch` events made of whole runs,
as labs publish; a real `labrxiv worker --queues events -c 1` subprocess records them
into a fresh database (PostgreSQL `labrxiv_bench`, dropped after; or a SQLite file).
The clock runs from the first publish until the store holds every event.

Baselines on the same database and table: plain batched INSERT (executemany, one
transaction per `--batch` rows), COPY (PostgreSQL; the same), and one Celery task per
event through the same worker. Every line also shows CPU per event of the process
doing the work, of the PostgreSQL backends serving it and of the publisher: on a
machine shared with other work these move far less than events/s do.

    .venv/bin/python bench/ingest.py                      # both backends
    .venv/bin/python bench/ingest.py --backend postgres --events 200000 --batch 500
    .venv/bin/python bench/ingest.py --backend postgres --concurrency 2   # two recorders
"""

import argparse
import multiprocessing
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import redis

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository, for a bare run

from common import (  # noqa: E402
    BACKENDS,
    INSERT_COLUMNS,
    REDIS_BASE,
    Measurement,
    Timer,
    backend_cpu,
    chunks,
    database_backends,
    drop_database,
    event_rows,
    fresh_database,
    pg_connect,
    print_table,
    process_cpu,
    simulated_events,
    sqlite_connect,
    sqlite_row,
    tree_cpu,
    whole_run_messages,
)

from events import EventStore  # noqa: E402
from events.ids import utcnow  # noqa: E402

DEFAULT_EVENTS = {"postgres": 200_000, "sqlite": 150_000}
STALL_SECONDS = 60.0
"""Give up when the store has not grown for this long (a dead or stuck worker)."""


def main() -> None:
    args = _parse_args()
    backends = BACKENDS if args.backend == "both" else (args.backend,)
    rows: list[Measurement] = []
    with tempfile.TemporaryDirectory(prefix="labrxiv-bench-") as tmp:
        workdir = Path(tmp)
        for backend in backends:
            count = args.events or DEFAULT_EVENTS[backend]
            rows.extend(_bench_backend(backend, count, args, workdir))
    print_table(
        f"ingest: messages of at most {args.batch} events (whole runs), baselines"
        f" {args.batch} rows per transaction; worker -P {args.pool}"
        f" -c {args.concurrency},"
        f" {os.cpu_count()} cores",
        rows,
        "µs/ev: CPU per event. client: the bench itself for the baselines, the worker and its"
        " pool for the path; db: the PostgreSQL backends serving it; pub: the publisher.",
    )


def _parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=[*BACKENDS, "both"], default="both")
    parser.add_argument(
        "--events", type=int, default=None, help="events to ingest (default: 200k PG, 150k SQLite)"
    )
    parser.add_argument(
        "--batch", type=int, default=500, help="most events per published message (whole runs)"
    )
    parser.add_argument(
        "--tasks", type=int, default=5000, help="events for the one-task-per-event baseline"
    )
    parser.add_argument("--redis-db", type=int, default=12, help="Redis database (flushed)")
    parser.add_argument("--pool", default="prefork", help="the worker's pool (-P)")
    parser.add_argument(
        "--concurrency", type=int, default=1, help="the worker's processes or threads (-c)"
    )
    parser.add_argument(
        "--skip-baselines", action="store_true", help="only the full path (for profiling)"
    )
    return parser.parse_args()


def _bench_backend(
    backend: str, count: int, args: argparse.Namespace, workdir: Path
) -> list[Measurement]:
    rows = []
    if not args.skip_baselines:
        events = simulated_events(count, "base")
        stored = event_rows(events, utcnow())
        del events
        url = fresh_database(backend, workdir, "insert")
        rows.append(_insert_baseline(backend, url, stored, args.batch))
        _show(rows[-1])
        if backend == "postgres":
            url = fresh_database(backend, workdir, "copy")
            rows.append(_copy_baseline(url, stored, args.batch))
            _show(rows[-1])
        del stored
    url = fresh_database(backend, workdir, "path")
    redis_url = f"{REDIS_BASE}/{args.redis_db}"
    redis.Redis.from_url(redis_url).flushdb()
    log_path = workdir / f"worker-{backend}.log"
    worker = _start_worker(url, redis_url, args.pool, args.concurrency, log_path)
    store = EventStore.from_url(url, create=False)
    try:
        path = _Path(backend, url, redis_url, store, worker)
        path.run(17, 17, "warm", "warm-up")
        what = "full path: publish → Redis → worker → store"
        rows.append(path.run(count, args.batch, "path", what))
        _show(rows[-1])
        # One event a message splits runs across messages: with more than one recorder
        # process a run's later event could be recorded first (a conflict).
        if not args.skip_baselines and args.concurrency == 1:
            what = "one Celery task per event, same worker"
            rows.append(path.run(args.tasks, 1, "task", what))
            _show(rows[-1])
    except BaseException:
        print((workdir / f"worker-{backend}.log").read_text()[-3000:], file=sys.stderr)
        raise
    finally:
        _stop_worker(worker)
        store.engine.dispose()
        redis.Redis.from_url(redis_url).flushdb()
        drop_database(backend)
    return rows


def _show(row: Measurement) -> None:
    print(f"{row.backend}: {row.what}: {row.events} events in {row.seconds:.2f}s", flush=True)


# -- baselines ---------------------------------------------------------------------


def _insert_baseline(
    backend: str, url: str, rows: list[tuple[Any, ...]], batch: int
) -> Measurement:
    what = f"plain batched INSERT (executemany, {batch}/txn)"
    cpu = time.process_time()
    if backend == "postgres":
        conn = pg_connect(url)
        server = conn.info.backend_pid
        server_cpu = process_cpu(server)
        sql = f"INSERT INTO events ({INSERT_COLUMNS}) VALUES ({', '.join(['%s'] * 11)})"
        with conn, Timer() as timer:
            for chunk in chunks(rows, batch):
                with conn.cursor() as cursor:
                    cursor.executemany(sql, chunk)
                conn.commit()
            server_cpu = process_cpu(server) - server_cpu
        return Measurement(
            backend, what, len(rows), timer.seconds, time.process_time() - cpu, server_cpu
        )
    lite = sqlite_connect(url)
    sql = f"INSERT INTO events ({INSERT_COLUMNS}) VALUES ({', '.join(['?'] * 11)})"
    texts = [sqlite_row(r) for r in rows]  # SQLite's storage forms, made before the clock
    cpu = time.process_time()
    with Timer() as timer:
        for chunk in chunks(texts, batch):
            lite.execute("BEGIN IMMEDIATE")
            lite.executemany(sql, chunk)
            lite.execute("COMMIT")
    lite.close()
    return Measurement(backend, what, len(rows), timer.seconds, time.process_time() - cpu)


def _copy_baseline(url: str, rows: list[tuple[Any, ...]], batch: int) -> Measurement:
    cpu = time.process_time()
    conn = pg_connect(url)
    server = conn.info.backend_pid
    server_cpu = process_cpu(server)
    with conn, Timer() as timer:
        for chunk in chunks(rows, batch):
            with conn.cursor() as cursor:
                with cursor.copy(f"COPY events ({INSERT_COLUMNS}) FROM STDIN") as copy:
                    for row in chunk:
                        copy.write_row(row)
            conn.commit()
        server_cpu = process_cpu(server) - server_cpu
    what = f"plain COPY ({batch}/txn)"
    return Measurement(
        "postgres", what, len(rows), timer.seconds, time.process_time() - cpu, server_cpu
    )


# -- the full path -----------------------------------------------------------------


def _start_worker(
    url: str, redis_url: str, pool: str, concurrency: int, log_path: Path
) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "LABRXIV_DATABASE_URL": url,
        "LABRXIV_REDIS_URL": redis_url,
        "LABRXIV_LOG_LEVEL": "WARNING",
        "LABRXIV_DATA_DIR": str(log_path.parent / "data"),
    }
    command = [str(Path(sys.executable).parent / "labrxiv"), "worker", "--queues", "events"]
    command += ["-c", str(concurrency), "-P", pool]
    log_file = log_path.open("wb")
    return subprocess.Popen(
        command, env=env, stdout=log_file, stderr=subprocess.STDOUT, start_new_session=True
    )


def _stop_worker(worker: subprocess.Popen[bytes]) -> None:
    if worker.poll() is not None:
        return
    worker.send_signal(signal.SIGTERM)
    try:
        worker.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait()


class _Path:
    """Publishes through Redis to the worker and times until the store holds the events."""

    def __init__(
        self,
        backend: str,
        url: str,
        redis_url: str,
        store: EventStore,
        worker: subprocess.Popen[bytes],
    ) -> None:
        self.backend, self.url, self.redis_url = backend, url, redis_url
        self.store, self.worker = store, worker

    def run(self, count: int, batch: int, prefix: str, what: str) -> Measurement:
        """Publish `count` events in messages of `batch` from a fresh publisher process."""
        target = self.store.count() + count
        spawn = multiprocessing.get_context("spawn")
        ready, go = spawn.Event(), spawn.Event()
        publisher_cpu, sent = spawn.Value("d", 0.0), spawn.Value("i", 0)
        publisher = spawn.Process(
            target=_publisher,
            args=(self.redis_url, count, batch, prefix, ready, go, publisher_cpu, sent),
            daemon=True,
        )
        publisher.start()
        ready.wait()
        servers = self._servers()
        server_cpu = backend_cpu(servers)
        worker_cpu = tree_cpu(self.worker.pid)
        started = time.perf_counter()
        go.set()
        self._wait_for(target)
        seconds = time.perf_counter() - started
        worker_cpu = tree_cpu(self.worker.pid) - worker_cpu
        db_cpu = None
        if self.backend == "postgres":
            after = backend_cpu(self._servers())
            db_cpu = sum(cpu - server_cpu.get(pid, 0.0) for pid, cpu in after.items())
        publisher.join()
        what = f"{what} ({count / sent.value:.0f} events/msg)"
        return Measurement(
            self.backend, what, count, seconds, worker_cpu, db_cpu, publisher_cpu.value
        )

    def _servers(self) -> list[int]:
        if self.backend != "postgres":
            return []
        with self.store.engine.connect() as conn:
            mine = conn.exec_driver_sql("SELECT pg_backend_pid()").scalar_one()
        return database_backends(self.url, exclude=[mine])

    def _wait_for(self, target: int) -> None:
        last, last_change = -1, time.perf_counter()
        while True:
            # max(position) is an index lookup; count() only once it says we may be done.
            head = self.store.max_position()
            if head >= target and self.store.count() >= target:
                return
            if dead := self.store.dead_letters(limit=1):
                raise SystemExit(f"the recorder dead-lettered events: {dead[0].reason}")
            if self.worker.poll() is not None:
                raise SystemExit(f"the worker exited with {self.worker.returncode}")
            if head != last:
                last, last_change = head, time.perf_counter()
            elif time.perf_counter() - last_change > STALL_SECONDS:
                raise SystemExit(f"no progress for {STALL_SECONDS:.0f}s at position {head}")
            time.sleep(0.05)


def _publisher(
    redis_url: str,
    count: int,
    batch: int,
    prefix: str,
    ready: Any,
    go: Any,
    cpu: Any,
    sent: Any,
) -> None:
    """The producer process: builds its events, then publishes them when told to."""
    from workers.app import make_celery
    from workers.bus.base import publish
    from workers.bus.celery import CeleryBus

    events = simulated_events(count, prefix)
    bus = CeleryBus(make_celery(redis_url, visibility_timeout=1800))
    messages = whole_run_messages(events, batch)
    sent.value = len(messages)
    bus.app.connection_for_write().ensure_connection()
    ready.set()
    go.wait()
    started = time.process_time()
    for message in messages:
        publish(bus, message)
    cpu.value = time.process_time() - started
    bus.close()


if __name__ == "__main__":
    main()
