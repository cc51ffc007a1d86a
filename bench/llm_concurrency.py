"""How many LLM labs can one 2-core machine keep waiting on their models?

LLM labs (the real `llm` policy and lab loop) run against a local OpenAI-compatible
server that answers every call after an added latency (default 500 ms), through the
real path: a recorder worker and steps workers on a thread pool, one process per core
by default (Celery on Redis, PostgreSQL log): one process's threads share one
interpreter lock, so a second process doubles what the steps can compute. For 10, 50
and 100 labs it counts the model calls answered during a measurement window and prints
them per second against the ideal, labs / latency (each lab always has exactly one
call in flight when nothing else costs time), and the CPU time the steps workers and
the recorder spent per answered call in the window (read from /proc: a figure that
moves less than the rate with how busy the machine is).

    python bench/llm_concurrency.py [--labs 10 50 100] [--latency 0.5] [--window 20]
                                    [--step-workers N] [--recorders N]
"""

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import psycopg
import redis

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "llm"))

from fake_server import FakeServer, completion, usage  # noqa: E402

from events import EventStore  # noqa: E402
from events.payloads import LlmConfig  # noqa: E402
from labrxiv.settings import load_settings  # noqa: E402
from labrxiv.wiring import open_bus  # noqa: E402
from workers.lab.campaign import CampaignPlan, start_campaign  # noqa: E402

PG_ADMIN = os.environ.get("LABRXIV_BENCH_PG", "postgresql://postgres@127.0.0.1:5432/postgres")
DATABASE = "labrxiv_bench_llm"
REDIS = os.environ.get("LABRXIV_BENCH_REDIS", "redis://127.0.0.1:6379") + "/13"
LABRXIV = Path(sys.executable).with_name("labrxiv")


@dataclass(frozen=True)
class Figures:
    rate: float
    """Answered calls per second in the window."""
    ideal: float
    steps_ms: float
    """CPU milliseconds of the steps workers per answered call in the window."""
    recorder_ms: float


def measure(
    labs: int, latency: float, window: float, warmup: float, step_workers: int, recorders: int
) -> Figures:
    """The window's figures for `labs` labs."""
    with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{DATABASE}" WITH (FORCE)')
        admin.execute(f'CREATE DATABASE "{DATABASE}"')
    redis.Redis.from_url(REDIS).flushdb()
    url = f"postgresql+psycopg://{PG_ADMIN.split('://', 1)[1].rsplit('/', 1)[0]}/{DATABASE}"
    store = EventStore.from_url(url)
    reply = completion(tool_calls=[("read_file", '{"path": "config.json"}')], usage=usage(200, 20))
    with FakeServer(default=reply, models=("bench-model",), latency_s=latency) as server, \
            tempfile.TemporaryDirectory() as data:  # fmt: skip
        env = dict(os.environ)
        env.update(
            LABRXIV_REDIS_URL=REDIS,
            LABRXIV_DATABASE_URL=url,
            LABRXIV_DATA_DIR=data,
            LABRXIV_LOG_LEVEL="WARNING",
            OPENAI_BASE_URL=server.url,
            OPENAI_API_KEY="bench-key",
        )
        workers = [
            _worker(env, ["-Q", "events", "-c", "1", "-P", "solo"]) for _ in range(recorders)
        ] + [
            _worker(env, ["-Q", "steps", "-c", str(-(-labs // step_workers) + 4), "-P", "threads"])
            for _ in range(step_workers)
        ]
        try:
            settings = load_settings(redis_url=REDIS, database_url=url, data_dir=Path(data))
            plan = CampaignPlan(
                task="continual-digits",
                labs=labs,
                papers=1,
                mode="isolated",
                seed=0,
                attempts=1,
                policy="llm",
                llm=LlmConfig(model="bench-model", phase_calls=10_000),
            )
            start_campaign(open_bus(settings), plan)
            time.sleep(warmup)
            before = _answered(store)
            cpu_before = [_cpu_seconds(w.pid) for w in workers]
            started = time.monotonic()
            time.sleep(window)
            after = _answered(store)
            elapsed = time.monotonic() - started
            cpu = [_cpu_seconds(w.pid) - b for w, b in zip(workers, cpu_before, strict=True)]
        finally:
            for worker in workers:
                os.killpg(worker.pid, signal.SIGKILL)
                worker.wait()
    store.engine.dispose()
    with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{DATABASE}" WITH (FORCE)')
    calls = max(1, after - before)
    return Figures(
        rate=(after - before) / elapsed,
        ideal=labs / latency,
        steps_ms=1000 * sum(cpu[recorders:]) / calls,
        recorder_ms=1000 * sum(cpu[:recorders]) / calls,
    )


def _cpu_seconds(pid: int) -> float:
    """User and system CPU seconds of a process, all its threads (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _answered(store: EventStore) -> int:
    with store.engine.connect() as conn:
        return int(
            conn.exec_driver_sql(
                "SELECT count(*) FROM events WHERE type = 'model.responded'"
            ).scalar_one()
        )


def _worker(env: dict[str, str], args: list[str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [str(LABRXIV), "worker", *args],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--labs", type=int, nargs="+", default=[10, 50, 100])
    parser.add_argument("--latency", type=float, default=0.5)
    parser.add_argument("--window", type=float, default=20.0)
    parser.add_argument("--warmup", type=float, default=10.0)
    parser.add_argument(
        "--step-workers",
        type=int,
        default=os.cpu_count() or 1,
        help="thread-pool steps worker processes (default: one per core)",
    )
    parser.add_argument(
        "--recorders", type=int, default=1, help="recorder worker processes (solo pool each)"
    )
    args = parser.parse_args()
    print(
        f"model latency {args.latency * 1000:.0f} ms, window {args.window:.0f} s, "
        f"{args.step_workers} steps worker process(es) on a thread pool, "
        f"{args.recorders} recorder(s)"
    )
    print(
        f"{'labs':>5}  {'calls/s':>8}  {'ideal':>7}  {'of ideal':>8}  "
        f"{'steps CPU/call':>14}  {'recorder CPU/call':>17}"
    )
    for labs in args.labs:
        got = measure(
            labs, args.latency, args.window, args.warmup, args.step_workers, args.recorders
        )
        print(
            f"{labs:>5}  {got.rate:>8.1f}  {got.ideal:>7.1f}  {got.rate / got.ideal:>8.0%}  "
            f"{got.steps_ms:>11.1f} ms  {got.recorder_ms:>14.1f} ms",
            flush=True,
        )


if __name__ == "__main__":
    main()
