"""Analysis benchmark: `labrxiv analyze CAMPAIGN` on a campaign of 1,000,000 events, its
time and peak memory beside a raw read of the same events, in the same run.

The log (setup, not timed) holds one campaign of LLM-shaped runs: phases, model calls
written ahead and answered (usage with reasoning tokens, frozen prices; retried
failures; one lab in ten on a model with no price), tool calls, graded attempts, a
paper. `--labs` runs work at once (their events interleave in the log, as parallel labs'
do); a template group of them is built and validated once and copied under new ids and
streams until the log is full. Each measurement runs in a process of its own, so its
peak resident memory (`ru_maxrss`) is its own:
- raw read: the campaign's rows by position, pages of 5000, as the driver returns them;
- `iter_records`: the same as `Recorded` rows (the analysis' input);
- analysis: `analysis.report.analyze_campaign(findings=False)` and the JSON document:
  behaviour, campaign figures, comparison and correlations (the bootstrap included);
- findings: the same with the failure-mode detectors (`labrxiv analyze CAMPAIGN`'s
  default), which read each run again as typed events;
- typed fold, for comparison: `Recorded.typed()` and `runstate.apply` of every event of
  the first `--typed-sample` events (what reading the runs through the fold would cost).

    .venv/bin/python bench/analyze.py                    # SQLite, 1,000,000 events
    .venv/bin/python bench/analyze.py --backend postgres
"""

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import asdict
from datetime import datetime, timedelta
from itertools import islice
from pathlib import Path
from typing import Any

import orjson
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from common import PG_ADMIN, START, event_rows, sqlite_connect, sqlite_row  # noqa: E402

from events import Event, EventStore  # noqa: E402
from events.ids import utcnow  # noqa: E402
from events.payloads import (  # noqa: E402
    CampaignStarted,
    ExperimentScored,
    LlmConfig,
    ModelCalled,
    ModelFailed,
    ModelResponded,
    PaperSubmitted,
    Payload,
    PhaseEntered,
    Price,
    RunFinished,
    RunStarted,
    ToolInvoked,
    ToolReturned,
    Usage,
)
from events.streams import RUN_PREFIX, campaign_stream, lab_run_stream  # noqa: E402

CAMPAIGN = "bench0analyz"
PG_DATABASE = "labrxiv_bench_analyze"
"""This bench's own database (bench/common's is shared by the other benches)."""
COLUMNS = (
    "position, id, stream, version, type, schema_version, occurred_at, recorded_at, "
    "causation_id, correlation_id, actor, payload"
)
PHASES = ("literature", "plan", "experiment", "writeup")
TOOLS = ("bash", "python", "read_file", "write_file", "evaluate", "search_archive")
PRICE = Price(input_per_mtok=0.15, cached_input_per_mtok=0.075, output_per_mtok=0.6, source="bench")
MEASURES = ("raw", "records", "analysis", "findings", "typed")


def main() -> None:
    args = _parse_args()
    if args.measure:
        _child(args)
        return
    with tempfile.TemporaryDirectory(prefix="labrxiv-bench-") as tmp:
        url = _fresh(args.backend, Path(tmp))
        try:
            started = time.perf_counter()
            runs = _fill(args.backend, url, args.events, args.labs, args.run_events)
            print(
                f"{args.backend}: filled {args.events} events ({runs} runs of ~{args.run_events},"
                f" {args.labs} at once) in {time.perf_counter() - started:.1f}s (not timed)",
                flush=True,
            )
            results = {m: _measure(m, url, args) for m in args.measures.split(",")}
        finally:
            _drop(args.backend)
    _report(args, results)


def _parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--events", type=int, default=1_000_000, help="events in the campaign")
    parser.add_argument("--labs", type=int, default=10, help="runs working at once")
    parser.add_argument("--run-events", type=int, default=1000, help="events of a run, about")
    parser.add_argument("--typed-sample", type=int, default=100_000)
    parser.add_argument(
        "--measures", default=",".join(MEASURES), help=f"which, of {','.join(MEASURES)}"
    )
    parser.add_argument("--measure", choices=MEASURES, help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    return parser.parse_args()


# -- measuring, one process each -------------------------------------------------------


def _measure(what: str, url: str, args: argparse.Namespace) -> dict[str, Any]:
    command = [sys.executable, __file__, "--measure", what, "--url", url]
    command += ["--typed-sample", str(args.typed_sample)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{what} failed:\n{done.stderr}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    print(
        f"{what}: {result['events']} events in {result['seconds']:.2f}s,"
        f" peak RSS {result['peak_mb']:.0f} MB ({result['start_mb']:.0f} MB before reading)",
        flush=True,
    )
    return result


def _child(args: argparse.Namespace) -> None:
    from analysis.report import analyze_campaign
    from runstate import apply, start

    store = EventStore.from_url(args.url, create=False)
    start_mb = _peak_mb()
    started = time.perf_counter()
    extra: dict[str, Any] = {}
    if args.measure == "raw":
        seen = _raw_read(store)
    elif args.measure == "records":
        seen = sum(1 for _ in store.iter_records(correlation=CAMPAIGN))
    elif args.measure in ("analysis", "findings"):
        result = analyze_campaign(store, CAMPAIGN, findings=args.measure == "findings")
        document = orjson.dumps(asdict(result), default=str)
        assert result.campaign is not None and result.across is not None
        seen = sum(r.behaviour.events for r in result.runs) + 1  # + campaign.started
        extra = {
            "runs": len(result.runs),
            "json_mb": len(document) / 1e6,
            "correlations": [asdict(c) for c in result.across.correlations],
        }
    else:
        states: dict[str, Any] = {}
        seen = 0
        for record in store.iter_records(correlation=CAMPAIGN):
            if seen == args.typed_sample:
                break
            seen += 1
            event = record.typed()
            if event.stream.startswith(RUN_PREFIX):
                had = states.get(event.stream)
                states[event.stream] = start(event) if had is None else apply(had, event)
    seconds = time.perf_counter() - started
    print(
        json.dumps(
            {"events": seen, "seconds": seconds, "peak_mb": _peak_mb(), "start_mb": start_mb}
            | extra
        )
    )


def _peak_mb() -> float:
    """This process's peak resident memory. Not `ru_maxrss`: Linux carries the forking
    parent's peak over into it through exec (it read 488 MB here before any work)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024  # kB
    raise RuntimeError("no VmHWM in /proc/self/status")


def _raw_read(store: EventStore) -> int:
    """The campaign's rows, page by page, as the driver gives them (the query
    `iter_records(correlation=…)` sends)."""
    marks = "%s" if store.engine.dialect.name == "postgresql" else "?"
    query = (
        f"SELECT {COLUMNS} FROM events WHERE position > {marks} AND correlation_id = {marks}"
        f" ORDER BY position LIMIT 5000"
    )
    seen, after = 0, 0
    with store.engine.connect() as conn:
        driver = conn.connection.driver_connection
        assert driver is not None
        cursor = driver.cursor()
        while rows := cursor.execute(query, (after, CAMPAIGN)).fetchall():
            seen += len(rows)
            after = rows[-1][0]
    return seen


def _report(args: argparse.Namespace, results: dict[str, dict[str, Any]]) -> None:
    raw, analysis = results["raw"], results["analysis"]
    typed_events = results["typed"]["events"] if "typed" in results else args.typed_sample
    print(
        f"\nanalysis of a campaign: {analysis['events']} events, {analysis['runs']} runs"
        f" ({args.backend}, {os.cpu_count()} cores)"
    )
    print(f"{'what':<34} {'seconds':>8} {'events/s':>10} {'µs/event':>9} {'peak RSS MB':>12}")
    for name, label in [
        ("raw", "raw read (driver rows)"),
        ("records", "iter_records (Recorded)"),
        ("analysis", "behaviour + across + JSON"),
        ("findings", "the same + findings (command)"),
        ("typed", f"typed() + runstate.apply, {typed_events} ev"),
    ]:
        if name not in results:
            continue
        r = results[name]
        print(
            f"{label:<34} {r['seconds']:>8.2f} {r['events'] / r['seconds']:>10,.0f}"
            f" {r['seconds'] / r['events'] * 1e6:>9.1f} {r['peak_mb']:>12.0f}"
        )
    print(
        f"analysis at {analysis['seconds'] / raw['seconds']:.2f}× the raw read's time;"
        f" JSON document {analysis['json_mb']:.1f} MB"
    )
    for c in analysis["correlations"]:
        pearson = c["pearson"]
        shown = "-" if pearson is None else f"r = {pearson['value']:+.3f}"
        print(f"  {c['x']} vs {c['y']}: n = {c['n']}, {shown} {c['note'] or ''}")
    for name in ("analysis", "findings"):
        if name not in results:
            continue
        r = results[name]
        met = r["seconds"] < 60 and r["peak_mb"] < 500
        print(f"target (under 60 s and under 500 MB), {name}: {'met' if met else 'NOT met'}")


# -- the log -----------------------------------------------------------------------


def _fresh(backend: str, workdir: Path) -> str:
    if backend == "sqlite":
        url = f"sqlite:///{workdir / 'analyze.db'}"
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


def _fill(backend: str, url: str, count: int, labs: int, run_events: int) -> int:
    """`count` events: campaign.started, then copies of a validated group of `labs`
    interleaved runs under new ids and streams. Returns how many runs were written."""
    group = sorted(
        (e for lab in range(labs) for e in _llm_run(lab, run_events, unpriced=lab == labs - 1)),
        key=lambda e: (e.occurred_at, e.stream, e.version),
    )
    template = event_rows(group, utcnow())
    opening = event_rows([_campaign_started(labs)], utcnow())[0]
    runs = 0

    def rows() -> Iterator[tuple[Any, ...]]:
        nonlocal runs
        yield (1, *opening)
        position, copy = 1, 0
        while position < count:
            for row in template[: count - position]:
                position += 1
                runs += row[2] == 0  # a version 0: a run begins
                yield (position, uuid.uuid4(), f"{row[1]}x{copy}", *row[2:])
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
    """`rows` in lists of `size`, never all at once (the bench's own memory stays small)."""
    while batch := list(islice(rows, size)):
        yield batch


def _campaign_started(labs: int) -> Event:
    return Event(
        id=uuid.uuid4(),
        stream=campaign_stream(CAMPAIGN),
        version=0,
        occurred_at=START,
        correlation_id=CAMPAIGN,
        actor="labrxiv",
        payload=CampaignStarted(task="bench-task", labs=labs, mode="archive"),
    )


def _llm_run(lab: int, size: int, unpriced: bool) -> list[Event]:
    """An LLM-shaped run of about `size` events, each lab step caused by the step before."""
    rng = random.Random(lab)
    stream = lab_run_stream(CAMPAIGN, lab)
    model = "bench-unpriced" if unpriced else "gpt-4o-mini"
    events: list[Event] = []
    clock = START
    cause: uuid.UUID | None = None

    def step(*payloads: Payload) -> None:
        nonlocal clock, cause
        for payload in payloads:
            clock += timedelta(seconds=rng.uniform(0.5, 40.0))
            events.append(_event(stream, len(events), clock, cause, lab, payload))
        cause = events[-1].id

    step(RunStarted(task="bench-task", lab=f"lab-{lab}", policy="llm", llm=LlmConfig(model=model)))
    best, attempt, calls, current = rng.uniform(0.1, 0.3), 0, 0, None
    while len(events) < size - 3:
        phase = PHASES[(len(events) * len(PHASES)) // size]
        entered = [PhaseEntered(phase=phase)] if phase != current else []
        current = phase
        calls += 1
        call = f"{stream}:{calls}/1"
        called = ModelCalled(
            call_id=call, request_id=call[:-2], attempt=1, model=model, provider="bench",
            phase=phase, messages=2 * calls,
        )  # fmt: skip
        step(*entered, called)
        if rng.random() < 0.05:  # a retried failure: another attempt of the same request
            step(ModelFailed(call_id=call, error="rate_limited", latency_s=0.3, will_retry=True))
            call = call[:-1] + "2"
            step(called.model_copy(update={"call_id": call, "attempt": 2}))
        tool = "evaluate" if phase == "experiment" and rng.random() < 0.3 else rng.choice(TOOLS)
        usage = Usage(
            input_tokens=rng.randint(2000, 30000), cached_input_tokens=rng.randint(0, 1500),
            output_tokens=rng.randint(300, 2000), reasoning_tokens=rng.randint(0, 250),
        )  # fmt: skip
        cost = None if unpriced else _cost(usage)
        answer = ModelResponded(
            call_id=call, model=model, usage=usage, latency_s=rng.uniform(1, 20),
            price=None if unpriced else PRICE, cost_usd=cost, cost_known=cost is not None,
            finish_reason="tool_calls", tool_calls=1,
        )  # fmt: skip
        tool_call = f"t{calls}"
        done: list[Payload] = [
            answer,
            ToolInvoked(call_id=tool_call, tool=tool, args={"command": f"run {calls}"}),
            ToolReturned(
                call_id=tool_call, tool=tool, exit_code=0 if rng.random() < 0.9 else 1,
                duration_s=rng.uniform(0.1, 120.0), preview=f"step {calls}",
            ),
        ]  # fmt: skip
        if tool == "evaluate":
            attempt += 1
            best = min(1.0, best + rng.uniform(-0.05, 0.06))
            done.append(
                ExperimentScored(
                    attempt=attempt,
                    subtask_scores={"accuracy": best},
                    score=best,
                    normalized_score=best,
                )  # fmt: skip
            )
        step(*done)
    paper = PaperSubmitted(
        paper_id=f"p-bench{lab}", task="bench-task", title="Bench", abstract="A", body="B"
    )
    step(paper, RunFinished(reason="done", detail="1 paper"))
    return events


def _cost(usage: Usage) -> float:
    fresh = usage.input_tokens - usage.cached_input_tokens
    return (
        fresh * PRICE.input_per_mtok
        + usage.cached_input_tokens * PRICE.cached_input_per_mtok
        + usage.output_tokens * PRICE.output_per_mtok
    ) / 1e6


def _event(
    stream: str, version: int, at: datetime, cause: uuid.UUID | None, lab: int, payload: Payload
) -> Event:
    return Event(
        id=uuid.uuid4(),
        stream=stream,
        version=version,
        occurred_at=at,
        causation_id=cause,
        correlation_id=CAMPAIGN,
        actor=f"lab-{lab}",
        payload=payload,
    )


if __name__ == "__main__":
    main()
