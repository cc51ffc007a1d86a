"""An experiment: the rebuild split by run stream instead of by read model.

`labrxiv rebuild` on two cores gives each process a group of read models and each
process reads the whole log (`projections.parallel_rebuild`). Split by stream instead, each
process would read half the log (`hashtext(stream)` parity, filtered by PostgreSQL) and
apply every run-keyed read model to it, so the log is read once in all. This bench
measures both ways on one PostgreSQL log of simulated runs (no papers, so the archive and
reviews read models have nothing to do and are left out of both), each with its two
processes started and waiting before the clock starts (no import time in the figure),
then checks both wrote the same number of rows:

    .venv/bin/python bench/rebuild_partitioned.py --events 400000

It patches the runner's page query and the projectors' checkpoint names in its child
processes: an experiment, not a way labrxiv rebuilds (docs/benchmarks.md has the result).
"""

import argparse
import logging
import multiprocessing
import sys
import time
from multiprocessing.synchronize import Event as Signal
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from common import drop_database, fresh_database, machine_cpu  # noqa: E402
from rebuild import _fill, _raw_read  # noqa: E402
from sqlalchemy import text  # noqa: E402

from events import EventStore  # noqa: E402
from projections.catalogue import all_projectors  # noqa: E402
from projections.parallel_rebuild import split  # noqa: E402
from projections.projector import Projector  # noqa: E402
from projections.runner import ProjectionRunner  # noqa: E402

LEFT_OUT = {"archive", "reviews"}
"""Read models keyed by paper, not by run stream, with nothing to apply here."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=400_000)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)  # not the renamed read models' first-use warnings
    url = fresh_database("postgres", Path("."), "partitioned")
    try:
        _fill("postgres", url, args.events)
        store = EventStore.from_url(url, create=False)
        for how in ("by read model", "by stream"):  # tables and versions made before timing
            for part in (0, 1):
                ProjectionRunner(store, _projectors(how, part)).create_schema()
        for _ in range(args.repeat):
            began = time.perf_counter()
            _raw_read(store, 5000)
            print(f"raw read: {args.events / (time.perf_counter() - began):,.0f} events/s")
            by_model = _two_processes(store, url, "by read model", args.events)
            by_stream = _two_processes(store, url, "by stream", args.events)
            if by_model != by_stream:
                raise SystemExit(f"the two ways wrote other rows: {by_model} / {by_stream}")
        store.engine.dispose()
    finally:
        drop_database("postgres")


def _run_keyed() -> list[Projector]:
    return [p for p in all_projectors() if p.name not in LEFT_OUT]


def _projectors(how: str, part: int) -> list[Projector]:
    """What process `part` applies: a group of read models, or every one under a
    checkpoint of its own for its half of the streams."""
    if how == "by read model":
        return split(_run_keyed(), 2)[part]
    projectors = _run_keyed()
    for projector in projectors:
        projector.name = f"{projector.name}#{part}"
    return projectors


def _two_processes(store: EventStore, url: str, how: str, events: int) -> dict[str, int]:
    """Both processes replay the log into emptied read models; prints the rate, the
    processes' CPU and the whole machine's (busy and idle) an event; returns row counts."""
    tables = [t.name for p in _run_keyed() for t in p.tables]
    with store.engine.begin() as conn:
        conn.execute(text(f"TRUNCATE {', '.join(tables)}"))
        conn.execute(text("DELETE FROM projection_checkpoints"))
    context = multiprocessing.get_context("spawn")
    results: Any = context.Queue()
    go = context.Event()
    children = [
        context.Process(target=_child, args=(url, how, part, go, results)) for part in (0, 1)
    ]
    for child in children:
        child.start()
    time.sleep(8)  # both have imported labrxiv and wait for `go`
    busy, total = machine_cpu()
    began = time.perf_counter()
    go.set()
    cpu = sum(results.get() for _ in children)
    seconds = time.perf_counter() - began
    busy_after, total_after = machine_cpu()
    for child in children:
        child.join()
    busy = busy_after - busy
    idle = total_after - total - busy
    print(
        f"{how}: {events / seconds:,.0f} events/s; µs an event: processes {cpu / events * 1e6:.1f},"
        f" machine busy {busy / events * 1e6:.1f} (idle {idle / events * 1e6:.1f})",
        flush=True,
    )
    with store.engine.connect() as conn:
        return {t: conn.execute(text(f"SELECT count(*) FROM {t}")).scalar_one() for t in tables}


def _child(url: str, how: str, part: int, go: Signal, results: Any) -> None:
    import projections.pages as pages

    store = EventStore.from_url(url, create=False)
    if how == "by stream":
        pages._PAGE = pages._PAGE.replace(
            "WHERE position > %s", f"WHERE position > %s AND (hashtext(stream) & 1) = {part}"
        )
    runner = ProjectionRunner(store, _projectors(how, part))
    runner.create_schema()
    go.wait()
    began = time.process_time()
    runner.catch_up()
    results.put(time.process_time() - began)
    store.engine.dispose()


if __name__ == "__main__":
    main()
