"""Exporter benchmark: one scrape of the research metrics over a log of 1,000,000 events
and 10,000 runs, its time and its number of series.

The log (setup, not timed) holds LLM-shaped runs of ~100 events (bench/analyze.py's
template: phases, model calls written ahead and answered, a retried failure now and
then, tool calls, graded attempts, a paper; one lab in ten on a model with no price),
ten working at once, copied under new ids and streams until the log is full; each copy's
labs are named apart (`lab-<i>c<copy mod 50>`: 500 labs) so the lab bound is exercised
too. The read models the research metrics read (runs, archive, ledger, curves) are built by a
catch-up (timed apart, for reference). Then `--scrapes` scrapes of the exporter's
registry (research metrics and projection lag, without Redis) are timed, each one the
queries and the text exposition, as Prometheus would get it.

    .venv/bin/python bench/exporter.py                        # PostgreSQL, 1,000,000 events
    .venv/bin/python bench/exporter.py --backend sqlite --events 200000
"""

import argparse
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from itertools import islice
from pathlib import Path
from typing import Any

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from analyze import COLUMNS, _campaign_started, _llm_run  # noqa: E402
from common import PG_ADMIN, sqlite_connect, sqlite_row  # noqa: E402
from common import event_rows as rows_of  # noqa: E402
from prometheus_client import CollectorRegistry, generate_latest  # noqa: E402

from events import EventStore  # noqa: E402
from events.ids import utcnow  # noqa: E402
from projections.archive import ArchiveProjector  # noqa: E402
from projections.curves import CurvesProjector  # noqa: E402
from projections.lag_metrics import LagCollector  # noqa: E402
from projections.ledger import LedgerProjector  # noqa: E402
from projections.metrics import Bounds, ResearchCollector  # noqa: E402
from projections.runner import ProjectionRunner  # noqa: E402
from projections.runs import RunsProjector  # noqa: E402

PG_DATABASE = "labrxiv_bench_exporter"
"""This bench's own database."""


def main() -> None:
    args = _parse_args()
    with tempfile.TemporaryDirectory() as workdir:
        url = _fresh(args.backend, Path(workdir))
        try:
            runs = _fill(args.backend, url, args.events, args.labs, args.run_events)
            store = EventStore.from_url(url)
            projectors = [RunsProjector(), ArchiveProjector(), LedgerProjector(), CurvesProjector()]
            runner = ProjectionRunner(store, projectors)
            started = time.perf_counter()
            runner.catch_up()
            built = time.perf_counter() - started
            _report(args, store, runs, built, [p.name for p in projectors])
            store.engine.dispose()
        finally:
            _drop(args.backend)


def _parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=("postgres", "sqlite"), default="postgres")
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--labs", type=int, default=10, help="runs working at once")
    parser.add_argument("--run-events", type=int, default=98, help="events per run, about")
    parser.add_argument("--scrapes", type=int, default=5)
    parser.add_argument("--runs-shown", type=int, default=Bounds.runs)
    return parser.parse_args()


def _report(
    args: argparse.Namespace, store: EventStore, runs: int, built: float, names: list[str]
) -> None:
    registry = CollectorRegistry()
    registry.register(ResearchCollector(store.engine, Bounds(runs=args.runs_shown)))
    registry.register(LagCollector(store.engine, names))
    seconds = []
    text = b""
    for _ in range(args.scrapes):
        started = time.perf_counter()
        text = generate_latest(registry)
        seconds.append(time.perf_counter() - started)
    lines = text.decode().splitlines()
    series = [line for line in lines if line and not line.startswith("#")]
    families = [line for line in lines if line.startswith("# TYPE")]
    print(f"backend: {args.backend}; log: {store.count():,} events, {runs:,} runs")
    print(f"read models runs, archive, ledger, curves built in {built:.1f} s (setup)")
    print(
        f"scrape (research metrics + projection lag), {args.scrapes} scrapes: "
        f"first {seconds[0] * 1000:.0f} ms, median {statistics.median(seconds) * 1000:.0f} ms, "
        f"max {max(seconds) * 1000:.0f} ms"
    )
    print(f"series: {len(series)} in {len(families)} metrics; {len(text):,} bytes")
    other = [line for line in series if line.startswith("labrxiv_exporter_other_runs")]
    print(f"runs shown one by one: {args.runs_shown}; {other[0] if other else ''}")


def _fill(backend: str, url: str, count: int, labs: int, run_events: int) -> int:
    """`count` events: campaign.started, then copies of a validated group of `labs`
    interleaved runs under new ids, streams, lab names and paper ids. Returns the runs."""
    group = sorted(
        (e for lab in range(labs) for e in _llm_run(lab, run_events, unpriced=lab == labs - 1)),
        key=lambda e: (e.occurred_at, e.stream, e.version),
    )
    template = rows_of(group, utcnow())
    opening = rows_of([_campaign_started(labs)], utcnow())[0]
    runs = 0

    def rows() -> Iterator[tuple[Any, ...]]:
        nonlocal runs
        yield (1, *opening)
        position, copy = 1, 0
        while position < count:
            for row in template[: count - position]:
                position += 1
                runs += row[2] == 0  # a version 0: a run begins
                payload = row[-1]
                if row[3] == "paper.submitted":  # paper ids are the archive's key
                    payload = payload.replace('"p-bench', f'"p-bench{copy}-')
                actor = row[9] if row[9].startswith("grader:") else f"{row[9]}c{copy % 50}"
                yield (position, uuid.uuid4(), f"{row[1]}x{copy}", *row[2:9], actor, payload)
            copy += 1

    if backend == "postgres":
        with psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://")) as conn:
            for chunk in _batches(rows(), 50_000):
                with conn.cursor() as cursor:
                    with cursor.copy(f"COPY events ({COLUMNS}) FROM STDIN") as copy:
                        for row in chunk:
                            copy.write_row(row)
                conn.commit()
            sequence = "pg_get_serial_sequence('events', 'position')"
            conn.execute(f"SELECT setval({sequence}, %s)", (count,))
            conn.commit()
            conn.autocommit = True
            conn.execute("VACUUM ANALYZE events")
        return runs
    lite = sqlite_connect(url)
    marks = ",".join("?" * 12)
    for chunk in _batches(rows(), 50_000):
        lite.execute("BEGIN IMMEDIATE")
        lite.executemany(
            f"INSERT INTO events ({COLUMNS}) VALUES ({marks})",
            [(row[0], *sqlite_row(row[1:])) for row in chunk],
        )
        lite.execute("COMMIT")
    lite.execute("ANALYZE")
    lite.close()
    return runs


def _batches(rows: Iterator[tuple[Any, ...]], size: int) -> Iterator[list[tuple[Any, ...]]]:
    while batch := list(islice(rows, size)):
        yield batch


def _fresh(backend: str, workdir: Path) -> str:
    if backend == "sqlite":
        url = f"sqlite:///{workdir / 'exporter.db'}"
    else:
        with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{PG_DATABASE}" WITH (FORCE)')
            admin.execute(f'CREATE DATABASE "{PG_DATABASE}"')
        base = PG_ADMIN.split("://", 1)[1].rsplit("/", 1)[0]
        url = f"postgresql+psycopg://{base}/{PG_DATABASE}"
    EventStore.from_url(url).engine.dispose()
    return url


def _drop(backend: str) -> None:
    if backend == "postgres":
        with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{PG_DATABASE}" WITH (FORCE)')


if __name__ == "__main__":
    main()
