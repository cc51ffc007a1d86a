"""Rebuild benchmark: events/s replayed by `ProjectionRunner.rebuild()`, beside raw reads.

The log is filled with simulated runs straight through COPY / executemany (setup, not
timed), then, on the same database:
- raw read: every row by position, pages of `--page`, through the driver, no conversion
  (first and again last; the ratio a rebuild makes of it is taken of the faster);
- `EventStore.iter_records`: the same, as `Recorded` rows (the read side's input);
- `rebuild()` with the runs projector alone; with every shipped projector in one process
  (each read model's apply timed); and with every shipped projector as `labrxiv rebuild`
  runs it (`default_jobs` processes on PostgreSQL: `projections.parallel_rebuild`).

    .venv/bin/python bench/rebuild.py                       # both backends, 500k events
    .venv/bin/python bench/rebuild.py --backend postgres --events 1000000
    .venv/bin/python bench/rebuild.py --backend postgres --each  # and each read model alone
"""

import argparse
import os
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from common import (  # noqa: E402
    BACKENDS,
    START,
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
    simulated_events,
    sqlite_connect,
    sqlite_row,
)
from llm_runs import llm_events  # noqa: E402

from events import EventStore  # noqa: E402
from events.gc_pause import gc_paused  # noqa: E402
from events.ids import utcnow  # noqa: E402
from projections.catalogue import all_projectors  # noqa: E402
from projections.checkpoints import read_checkpoints  # noqa: E402
from projections.parallel_rebuild import default_jobs, plan  # noqa: E402
from projections.projector import Projector  # noqa: E402
from projections.runner import ProjectionRunner  # noqa: E402
from projections.runs import RunsProjector  # noqa: E402

_RUNS = {"simulated": "simulated runs of 17", "llm": "llm runs of 38"}
TEMPLATE_EVENTS = 34_000
"""Simulated events built once (2,000 runs) and copied under new ids and streams."""
RAW = "raw read (driver rows, no Recorded)"
RAW_AGAIN = "raw read, again (last)"
RAW_GC = "raw read, collector on"
EVERY_ONE = "rebuild(): every projector, one process"
EVERY = "rebuild(): every projector (labrxiv rebuild)"
ALONE = "rebuild(), alone:"
COLUMNS = (
    "position, id, stream, version, type, schema_version, occurred_at, recorded_at, "
    "causation_id, correlation_id, actor, payload"
)


def main() -> None:
    args = _parse_args()
    backends = BACKENDS if args.backend == "both" else (args.backend,)
    rows: list[Measurement] = []
    with tempfile.TemporaryDirectory(prefix="labrxiv-bench-") as tmp:
        for backend in backends:
            rows.extend(_bench_backend(backend, args, Path(tmp)))
    print_table(
        f"rebuild: {args.events} events ({_RUNS[args.runs]}), pages of {args.page},"
        f" {os.cpu_count()} cores",
        rows,
        "µs/ev: CPU per event. client: this process (with the reader thread); db: the"
        " PostgreSQL backends serving it.",
    )
    for backend in backends:  # the ratio to the raw read of the same run, the baseline
        measured = {r.what: r for r in rows if r.backend == backend}
        raw = max(measured[RAW], measured[RAW_AGAIN], key=lambda r: r.rate)
        every = next(r for r in rows if r.backend == backend and r.what.startswith(EVERY))
        print(
            f"{backend}: every projector (labrxiv rebuild) at {every.rate / raw.rate:.2f} of"
            f" the raw read ({every.rate:,.0f} against {raw.rate:,.0f} events/s, same run)"
        )
        base = measured[RAW_GC]
        print(
            f"{backend}: and at {every.rate / base.rate:.2f} of the raw read with the"
            f" collector on ({base.rate:,.0f} events/s)"
        )
        spent = SPENT.get(backend, {})
        if spent:  # where the one-process rebuild's time went, read model by read model
            one = measured[EVERY_ONE]
            parts = ", ".join(f"{name} {s / one.events * 1e6:.2f}" for name, s in spent.items())
            print(f"{backend}: CPU of each read model's apply, µs an event: {parts}")


def _parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=[*BACKENDS, "both"], default="both")
    parser.add_argument("--events", type=int, default=500_000, help="events in the log")
    parser.add_argument("--page", type=int, default=5000, help="events read per page")
    parser.add_argument(
        "--runs",
        choices=["simulated", "llm"],
        default="simulated",
        help="the runs the log holds: simulated (17 events, no model call) or llm (38"
        " events, 8 model calls with tokens and dollars)",
    )
    parser.add_argument(
        "--each",
        action="store_true",
        help="also rebuild each read model alone (its CPU beside the log's read it needs)",
    )
    return parser.parse_args()


def _bench_backend(backend: str, args: argparse.Namespace, workdir: Path) -> list[Measurement]:
    url = fresh_database(backend, workdir, "rebuild")
    try:
        with Timer() as fill:
            _fill(backend, url, args.events, args.runs)
        print(f"{backend}: filled {args.events} events in {fill.seconds:.1f}s (not timed)")
        store = EventStore.from_url(url, create=False)
        count = store.count()
        page = args.page
        timed = _timed(all_projectors(), SPENT.setdefault(backend, {}))
        jobs = default_jobs(store)
        measured = [
            _measure(backend, url, RAW, count, lambda: _raw_read(store, page)),
            _measure(backend, url, RAW_GC, count, lambda: _raw_read(store, page, pause=False)),
            _measure(backend, url, "EventStore.iter_records (no projector)", count,
                     lambda: sum(1 for _ in store.iter_records(page=page))),
            _measure(backend, url, "rebuild(): runs projector", count,
                     _rebuild(store, [RunsProjector()], page, 1)),
            _measure(backend, url, EVERY_ONE, count, _rebuild(store, timed, page, 1)),
            _measure(backend, url, f"{EVERY}, {jobs} process(es)", count,
                     _watched(store, _rebuild(store, all_projectors(), page, jobs), jobs),
                     children=jobs > 1),
            # Again last, warm: the ratio is taken of the faster of the two raw reads.
            _measure(backend, url, RAW_AGAIN, count, lambda: _raw_read(store, page)),
        ]  # fmt: skip
        if args.each:  # what each read model costs with the read of the log it needs
            measured += [
                _measure(backend, url, f"{ALONE} {p.name}", count, _rebuild(store, [p], page, 1))
                for p in all_projectors()
            ]
        store.engine.dispose()
        return measured
    finally:
        drop_database(backend)


def _measure(
    backend: str,
    url: str,
    what: str,
    count: int,
    work: Callable[[], int],
    children: bool = False,
) -> Measurement:
    """Time `work`; `children`: it runs processes of its own, whose CPU counts as the
    client's (their database backends are gone by the end: not measured)."""
    before = backend_cpu(database_backends(url)) if backend == "postgres" else {}
    cpu = _client_cpu()
    with Timer() as timer:
        seen = work()
    client = _client_cpu() - cpu
    db = None
    if backend == "postgres" and not children:
        after = backend_cpu(database_backends(url))
        db = sum(value - before.get(pid, 0.0) for pid, value in after.items())
    if seen != count:
        raise SystemExit(f"{what}: saw {seen} events, the log holds {count}")
    row = Measurement(backend, what, count, timer.seconds, client, db)
    print(f"{backend}: {what}: {row.rate:,.0f} events/s", flush=True)
    return row


def _client_cpu() -> float:
    """CPU seconds of this process and of its children that have ended."""
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


SPENT: dict[str, dict[str, float]] = {}
"""Per backend, the thread CPU seconds each read model's `apply` took in the
every-projector rebuild (its writes included; the reader thread's work is not in it)."""


def _timed(projectors: list[Projector], spent: dict[str, float]) -> list[Projector]:
    """`projectors`, each `apply` adding its thread CPU time to `spent` by name."""
    for projector in projectors:
        apply = projector.apply

        def timed(conn: Any, events: Any, apply: Any = apply, name: str = projector.name) -> None:
            began = time.thread_time()
            apply(conn, events)
            spent[name] = spent.get(name, 0.0) + time.thread_time() - began

        projector.apply = timed  # type: ignore[method-assign]
    return projectors


def _watched(store: EventStore, work: Callable[[], int], jobs: int) -> Callable[[], int]:
    """`work` (a rebuild in `jobs` processes) with its groups' checkpoints watched: prints
    when each group applied its first page and reached the head, against the first group
    (this process's): the spawned processes' late start `split` gives a head start for
    (`projections.parallel_rebuild.SPAWN_SECONDS`), and how far from together the groups ended."""
    if jobs < 2:
        return work
    groups = [[p.name for p in g] for g in plan(store, all_projectors(), jobs)]
    head = store.max_position()

    def watched() -> int:
        seen: dict[int, list[float]] = {}
        reset: set[int] = set()  # groups whose checkpoint the rebuild has dropped
        stop = threading.Event()

        def watch() -> None:
            with store.engine.connect() as conn:
                while not stop.wait(0.05):  # 20 looks a second: a little CPU in the timing
                    at = read_checkpoints(conn, [names[0] for names in groups])
                    conn.rollback()
                    now = time.perf_counter()
                    for index, names in enumerate(groups):
                        position = at.get(names[0], 0)
                        if position == 0:
                            reset.add(index)
                        if position > 0 and index in reset and index not in seen:
                            seen[index] = [now, now]
                        if position < head and index in seen:
                            seen[index][1] = now

        watcher = threading.Thread(target=watch, daemon=True)
        began = time.perf_counter()
        watcher.start()
        try:
            return work()
        finally:
            stop.set()
            watcher.join()
            if 0 in seen:
                first, end = seen[0]
                print(
                    f"  first group: first page at {first - began:.2f} s,"
                    f" at the head at {end - began:.2f} s"
                )
                for index in range(1, len(groups)):
                    start, ended = seen.get(index, [float("nan")] * 2)
                    print(
                        f"  spawned group {', '.join(groups[index])}: first page"
                        f" {start - first:.2f} s after the first group's"
                        f" ({', '.join(groups[0])}), at the head {ended - end:+.2f} s after it"
                    )

    return watched


def _rebuild(
    store: EventStore, projectors: list[Projector], page: int, jobs: int
) -> Callable[[], int]:
    """`rebuild()` with `projectors` in `jobs` processes, returning events replayed (it
    counts each projector's)."""
    runner = ProjectionRunner(store, projectors, page=page)
    return lambda: runner.rebuild(jobs).applied // len(projectors)


# -- filling the log ---------------------------------------------------------------


def _fill(backend: str, url: str, count: int, runs: str = "simulated") -> None:
    """`count` events: copies of a template of `runs` (simulated ones, or `llm` ones with
    their model calls: `bench/llm_runs.py`), each under new streams."""
    size = min(count, TEMPLATE_EVENTS)
    made = llm_events(size, "t", START) if runs == "llm" else simulated_events(size, "t")
    template = event_rows(made, utcnow())
    position = 0

    def copies() -> Any:
        nonlocal position
        copy = 0
        while position < count:
            for row in template[: count - position]:
                position += 1
                stream = f"{row[1]}x{copy}"
                yield (position, uuid.uuid4(), stream, *row[2:])
            copy += 1

    if backend == "postgres":
        conn = pg_connect(url)
        with conn:
            for chunk in chunks(list(copies()), 50_000):
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
        return
    lite = sqlite_connect(url)
    marks = ",".join("?" * 12)
    for chunk in chunks(list(copies()), 50_000):
        lite.execute("BEGIN IMMEDIATE")
        lite.executemany(
            f"INSERT INTO events ({COLUMNS}) VALUES ({marks})",
            [(row[0], *sqlite_row(row[1:])) for row in chunk],
        )
        lite.execute("COMMIT")
    lite.execute("ANALYZE")
    lite.close()


def _raw_read(store: EventStore, page: int, pause: bool = True) -> int:
    """Every row in position order, page by page, as the driver returns it, each payload
    parsed, on a pooled connection of the store's engine (its session in UTC), with the
    cyclic collector paused as the rebuild and `iter_records` pause it (`pause`): with it
    on, the collector's walks of the page's rows take half this read's CPU, and the
    rebuild's ratio to this read would look twice what it is (docs/benchmarks.md).

    The payload is read as text and parsed with orjson, as the rebuild's reader reads it
    (`projections.pages`): on PostgreSQL psycopg's own JSON loader cost ~0.8 µs an event
    more, and a baseline slower than the rebuild's own read would flatter the rebuild's
    ratio; SQLite's driver gives text, parsed the same way."""
    postgres = store.engine.dialect.name == "postgresql"
    marks = "%s" if postgres else "?"
    columns = COLUMNS.replace("payload", "payload::text") if postgres else COLUMNS
    query = f"SELECT {columns} FROM events WHERE position > {marks} ORDER BY position LIMIT {marks}"
    seen, after = 0, 0
    loads = orjson.loads
    with gc_paused() if pause else nullcontext(), store.engine.connect() as conn:
        driver = conn.connection.driver_connection
        assert driver is not None
        cursor = driver.cursor(**({"binary": True} if postgres else {}))
        while rows := _fetch(cursor.execute(query, (after, page))):
            payloads = [loads(row[11]) for row in rows]  # SQLite's are text too
            assert len(payloads) == len(rows)
            seen += len(rows)
            after = rows[-1][0]
    return seen


def _fetch(cursor: Any) -> Sequence[Any]:
    return cursor.fetchall()


if __name__ == "__main__":
    main()
