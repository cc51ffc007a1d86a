"""`labrxiv serve` benchmark: the time of each page and API answer over a large log,
beside the raw read of the read model it shows.

The log (setup, not timed) is bench/exporter.py's: LLM-shaped runs of ~100 events,
one campaign, a paper a run, copied under new ids until the log is full (1,000,000
events: ~10,000 runs and papers). Every read model is built by a catch-up (timed
apart, for reference) and analyzed. Then each page is asked `--requests` times through
the app in process (FastAPI's test client: routing, the reads, the template, no socket),
and the read-model query it rests on is run as many times on its own; medians are
printed.

    .venv/bin/python bench/serve_pages.py                        # PostgreSQL, 1,000,000 events
    .venv/bin/python bench/serve_pages.py --backend sqlite --events 100000
"""

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import exporter  # noqa: E402
from fastapi.testclient import TestClient  # noqa: E402
from sqlalchemy import Connection, select  # noqa: E402

from events import EventStore  # noqa: E402
from labrxiv.web.app import create_app  # noqa: E402
from projections.archive import PAPERS, get_paper  # noqa: E402
from projections.archive_pages import PaperFilter, papers_page  # noqa: E402
from projections.archive_search import search_page  # noqa: E402
from projections.campaigns import campaigns_of  # noqa: E402
from projections.catalogue import all_projectors  # noqa: E402
from projections.curves import curve_points  # noqa: E402
from projections.runner import ProjectionRunner  # noqa: E402
from projections.runs import RunView, runs_of  # noqa: E402

DATABASE = "labrxiv_bench_serve"
"""This bench's own PostgreSQL database, unless `--database` names another."""
TARGET_MS = 200.0

Read = Callable[[Connection], Any]


def main() -> None:
    args = _parse_args()
    exporter.PG_DATABASE = args.database
    with tempfile.TemporaryDirectory() as workdir:
        url = exporter._fresh(args.backend, Path(workdir))
        try:
            runs = exporter._fill(args.backend, url, args.events, args.labs, args.run_events)
            store = EventStore.from_url(url)
            runner = ProjectionRunner(store, all_projectors())
            runner.create_schema()
            started = time.perf_counter()
            runner.catch_up()
            built = time.perf_counter() - started
            _analyze(args.backend, store)
            print(f"backend: {args.backend}; log: {store.count():,} events, {runs:,} runs")
            print(f"every read model built in {built:.1f} s (setup)")
            _measure(store, args.requests)
            store.engine.dispose()
        finally:
            if args.keep:
                print(f"kept: {url}")
            else:
                exporter._drop(args.backend)


def _analyze(backend: str, store: EventStore) -> None:
    """Gather the planner's statistics of every read model, as autovacuum does after a
    bulk load (a server may run without it, as the machine of docs/serve.md does)."""
    with store.engine.connect() as conn:
        if backend == "postgres":
            conn.execution_options(isolation_level="AUTOCOMMIT").exec_driver_sql("VACUUM ANALYZE")
        else:
            conn.exec_driver_sql("ANALYZE")


def _parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=("postgres", "sqlite"), default="postgres")
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--labs", type=int, default=10, help="runs working at once")
    parser.add_argument("--run-events", type=int, default=98, help="events per run, about")
    parser.add_argument("--requests", type=int, default=5, help="times each page is asked")
    parser.add_argument("--database", default=DATABASE, help="PostgreSQL database to fill")
    parser.add_argument("--keep", action="store_true", help="leave the PostgreSQL database")
    return parser.parse_args()


def _pages(store: EventStore, conn: Connection) -> list[tuple[str, str, Read]]:
    """(name, URL, the read-model query it shows) of each page measured."""
    paper = conn.execute(select(PAPERS.c.paper_id, PAPERS.c.title).limit(1)).one()
    (campaign,) = [c.campaign for c in campaigns_of(conn)]
    shown = [r.stream for r in runs_of(conn, campaign=campaign, limit=50)]

    def first(c: Connection) -> list[RunView]:
        """The campaign's first page of runs."""
        return runs_of(c, campaign=campaign, limit=50)

    run = shown[0]
    words = paper.title.split()[0]
    every = PaperFilter()
    last = max(1, -(-papers_page(conn, every, 0, 1).total // 50))
    end = (last - 1) * 50
    return [
        ("archive, page 1", "/papers", lambda c: papers_page(c, every, 0, 50)),
        ("archive, last page", f"/papers?page={last}", lambda c: papers_page(c, every, end, 50)),
        ("archive search", f"/papers?q={words}", lambda c: search_page(c, words, every, 0, 50)),
        ("paper", f"/papers/{paper.paper_id}", lambda c: get_paper(c, paper.paper_id)),
        ("campaigns", "/campaigns", campaigns_of),
        ("campaign", f"/campaigns/{campaign}", lambda c: (campaigns_of(c, campaign), first(c))),
        (
            "curve (SVG)",
            f"/campaigns/{campaign}/curves/time.svg",
            lambda c: curve_points(c, campaign, runs=shown),
        ),
        ("runs, page 1", "/runs", lambda c: runs_of(c, limit=50)),
        ("run", f"/runs/{run}", lambda c: runs_of(c, streams=[run])),
        ("trajectory", f"/runs/{run}/trajectory", lambda c: store.read_stream(run)),
        ("API papers", "/api/v1/papers", lambda c: papers_page(c, every, 0, 50)),
        (
            "API campaign",
            f"/api/v1/campaigns/{campaign}",
            lambda c: (campaigns_of(c, campaign), first(c)),
        ),
        ("API run", f"/api/v1/runs/{run}", lambda c: runs_of(c, streams=[run])),
    ]


def _median_ms(call: Callable[[], Any], times: int) -> float:
    seconds = []
    for _ in range(times):
        started = time.perf_counter()
        call()
        seconds.append(time.perf_counter() - started)
    return statistics.median(seconds) * 1000


def _measure(store: EventStore, times: int) -> None:
    with store.engine.connect() as conn:
        pages = _pages(store, conn)
    header = f"page ms (median of {times}) | raw read ms | under {TARGET_MS:.0f} ms"
    print(f"\n| page | URL | {header} |")
    print("| --- | --- | ---: | ---: | --- |")
    with TestClient(create_app(store)) as client:
        for name, url, read in pages:

            def ask(url: str = url) -> None:
                answer = client.get(url)
                assert answer.status_code == 200, (url, answer.status_code, answer.text[:200])

            page_ms = _median_ms(ask, times)
            with store.engine.connect() as conn:
                raw_ms = _median_ms(lambda read=read: read(conn), times)  # type: ignore[misc]
            met = "yes" if page_ms < TARGET_MS else "**no**"
            print(f"| {name} | `{url[:40]}` | {page_ms:,.0f} | {raw_ms:,.0f} | {met} |")


if __name__ == "__main__":
    main()
