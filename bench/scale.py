"""How answered model calls per second scale with steps worker processes and recorders.

A fixed campaign of `llm` labs (the real policy and lab loop, as in
bench/llm_concurrency.py) against a local OpenAI-compatible server that answers every
call after a fixed latency (default 200 ms), through the real path: a private
`redis-server`, a fresh PostgreSQL log, `labrxiv worker -Q events -P solo` recorders
and `labrxiv worker -Q steps -P threads` processes, for every pairing of
`--step-workers` (1, 2, 4) and `--recorders` (1, 2). Every worker has logged `ready.`
before the campaign starts; the figure is the campaign's answered calls (`labs` x
`--calls` recorded `model.responded` events) over its wall time, beside the ideal,
labs / latency (every lab always waiting on its model; each process has enough
threads for all its labs, so the pool never binds). The CPU columns are what the
steps processes, the recorders and the whole machine (all cores, anything else running
included) spent per answered call, from /proc, with PostgreSQL's backends serving the
bench database and this process (the model server's threads) apart.

    python bench/scale.py [--labs 40] [--calls 25] [--latency 0.2]
                          [--step-workers 1 2 4] [--recorders 1 2] [--quick]
"""

import argparse
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import psycopg
import redis

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests" / "llm"))

from common import (  # noqa: E402
    PG_ADMIN,
    database_backends,
    labrxiv_worker,
    machine_cpu,
    private_redis,
    process_cpu,
    stop_worker,
    wait_ready,
)
from fake_server import FakeServer, completion, usage  # noqa: E402

from events import EventStore  # noqa: E402
from events.payloads import LlmConfig  # noqa: E402
from labrxiv.settings import load_settings  # noqa: E402
from labrxiv.wiring import open_bus  # noqa: E402
from workers.lab.campaign import CampaignPlan, start_campaign  # noqa: E402

DATABASE = "labrxiv_bench_scale"


@dataclass(frozen=True)
class Row:
    """One configuration's figures."""

    step_workers: int
    recorders: int
    calls: int
    """Answered calls counted at the end (at least the campaign's)."""
    seconds: float
    ideal: float
    steps_ms: float
    """CPU milliseconds of the steps processes per answered call."""
    recorder_ms: float
    database_ms: float
    """CPU milliseconds of PostgreSQL's backends serving the bench database per answered call."""
    bench_ms: float
    """CPU milliseconds of this process (the model server's threads, the count polls)."""
    machine_ms: float
    """CPU milliseconds of the whole machine (all cores, every process) per answered call."""
    busy: float
    """Share of the machine's cores busy during the campaign."""
    load: float
    """One-minute load average when the configuration started."""

    @property
    def rate(self) -> float:
        return self.calls / self.seconds


def measure(
    redis_url: str, workdir: Path, labs: int, calls: int, latency: float, steps: int, recorders: int
) -> Row:
    """Run the campaign once with `steps` steps processes and `recorders` recorders."""
    load = os.getloadavg()[0]
    with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{DATABASE}" WITH (FORCE)')
        admin.execute(f'CREATE DATABASE "{DATABASE}"')
    redis.Redis.from_url(redis_url).flushall()
    url = f"postgresql+psycopg://{PG_ADMIN.split('://', 1)[1].rsplit('/', 1)[0]}/{DATABASE}"
    store = EventStore.from_url(url)
    data = workdir / f"data-{steps}-{recorders}"
    data.mkdir()
    reply = completion(tool_calls=[("read_file", '{"path": "config.json"}')], usage=usage(200, 20))
    with FakeServer(default=reply, models=("bench-model",), latency_s=latency) as server:
        env = dict(os.environ)
        env.update(
            LABRXIV_REDIS_URL=redis_url,
            LABRXIV_DATABASE_URL=url,
            LABRXIV_DATA_DIR=str(data),
            LABRXIV_LOG_LEVEL="INFO",  # wait_ready reads Celery's `ready.` line
            OPENAI_BASE_URL=server.url,
            OPENAI_API_KEY="bench-key",
        )
        threads = str(-(-labs // steps) + 4)
        queues = [["-Q", "events", "-c", "1", "-P", "solo"]] * recorders + [
            ["-Q", "steps", "-c", threads, "-P", "threads"]
        ] * steps
        workers = []
        try:
            for index, args in enumerate(queues):
                log = workdir / f"worker-{steps}-{recorders}-{index}.log"
                workers.append((labrxiv_worker(env, args, log), log))
            wait_ready(workers)
            settings = load_settings(redis_url=redis_url, database_url=url, data_dir=data)
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
            cpu_before = [process_cpu(proc.pid) for proc, _ in workers]
            database_before = {pid: process_cpu(pid) for pid in database_backends(url)}
            bench_before = process_cpu(os.getpid())
            busy_before, total_before = machine_cpu()
            started = time.monotonic()
            start_campaign(open_bus(settings), plan)
            target = labs * calls
            while (answered := _answered(store)) < target:
                if time.monotonic() - started > 600:
                    raise SystemExit(f"only {answered} of {target} calls answered in 600 s")
                time.sleep(0.05)
            seconds = time.monotonic() - started
            busy_after, total_after = machine_cpu()
            bench = process_cpu(os.getpid()) - bench_before
            database = sum(
                process_cpu(pid) - database_before.get(pid, 0.0) for pid in database_backends(url)
            )
            cpu = [
                process_cpu(proc.pid) - b for (proc, _), b in zip(workers, cpu_before, strict=True)
            ]
        finally:
            for proc, _ in workers:
                stop_worker(proc)
    store.engine.dispose()
    with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{DATABASE}" WITH (FORCE)')
    return Row(
        step_workers=steps,
        recorders=recorders,
        calls=answered,
        seconds=seconds,
        ideal=labs / latency,
        steps_ms=1000 * sum(cpu[recorders:]) / answered,
        recorder_ms=1000 * sum(cpu[:recorders]) / answered,
        database_ms=1000 * database / answered,
        bench_ms=1000 * bench / answered,
        machine_ms=1000 * (busy_after - busy_before) / answered,
        busy=(busy_after - busy_before) / (total_after - total_before),
        load=load,
    )


def _answered(store: EventStore) -> int:
    with store.engine.connect() as conn:
        return int(
            conn.exec_driver_sql(
                "SELECT count(*) FROM events WHERE type = 'model.responded'"
            ).scalar_one()
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--labs", type=int, default=40)
    parser.add_argument("--calls", type=int, default=25, help="model calls per lab")
    parser.add_argument("--latency", type=float, default=0.2, help="seconds per model call")
    parser.add_argument("--step-workers", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--recorders", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--quick", action="store_true", help="20 labs x 10 calls")
    args = parser.parse_args()
    if args.quick:
        args.labs, args.calls = 20, 10
    print(
        f"{args.labs} llm labs x {args.calls} calls, model latency {args.latency * 1000:.0f} ms,"
        f" {os.cpu_count()} cores; ideal = labs / latency = {args.labs / args.latency:.0f} calls/s"
    )
    print("CPU ms per answered call: steps processes, recorders, PostgreSQL backends, this")
    print("process (model server, polls), the whole machine (anything else running included)")
    print(
        f"{'steps':>5} {'rec':>3} {'calls':>6} {'wall s':>7} {'calls/s':>8} {'ideal':>6}"
        f" {'of ideal':>8} {'steps':>6} {'rec':>5} {'pg':>5} {'bench':>5} {'machine':>7}"
        f" {'busy':>5} {'load':>5}"
    )
    with tempfile.TemporaryDirectory() as folder:
        workdir = Path(folder)
        with private_redis(workdir) as redis_url:
            for steps in args.step_workers:
                for recorders in args.recorders:
                    row = measure(
                        redis_url, workdir, args.labs, args.calls, args.latency, steps, recorders
                    )
                    print(
                        f"{row.step_workers:>5} {row.recorders:>3} {row.calls:>6}"
                        f" {row.seconds:>7.1f} {row.rate:>8.1f} {row.ideal:>6.0f}"
                        f" {row.rate / row.ideal:>8.0%} {row.steps_ms:>6.1f}"
                        f" {row.recorder_ms:>5.1f} {row.database_ms:>5.1f}"
                        f" {row.bench_ms:>5.1f} {row.machine_ms:>7.1f}"
                        f" {row.busy:>5.0%} {row.load:>5.1f}",
                        flush=True,
                    )


if __name__ == "__main__":
    main()
