"""Archive rebuild on a paper-heavy log: events/s of the archive read model rebuilt alone,
with the claims of every paper verified against its author's graded attempts.

Each run writes config.json, trains, evaluates, is graded and submits a paper, `--rounds`
times (8 events a paper); the runs' events are interleaved in time, so an author's events
before a paper lie in the paper's page and in earlier ones. The best of `--repeat`
rebuilds is shown: its wall time, this process's CPU (the database's with it on SQLite)
and a digest of the claims' marks (equal digests: equal marks).

    .venv/bin/python bench/archive_papers.py                      # SQLite, 400 runs
    .venv/bin/python bench/archive_papers.py --backend postgres --runs 2000
"""

import argparse
import hashlib
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from common import START, drop_database, fresh_database  # noqa: E402
from sqlalchemy import func, select  # noqa: E402

from events import Event, EventStore  # noqa: E402
from events.payloads import (  # noqa: E402
    Budget,
    Claim,
    ExperimentScored,
    PaperSubmitted,
    Payload,
    RunStarted,
    ToolInvoked,
    ToolReturned,
)
from events.streams import event_id_at, run_stream  # noqa: E402
from projections.archive import PAPER_CLAIMS, PAPERS, ArchiveProjector  # noqa: E402
from projections.runner import ProjectionRunner  # noqa: E402


def run_events(index: int, rounds: int) -> list[Event]:
    """One run's events: `rounds` times a config write, a training script, a graded
    evaluation and a paper claiming it (every third claim overclaimed)."""
    stream = run_stream(f"bench-{index}")
    events: list[Event] = []
    clock = START + timedelta(seconds=index / 100)

    def add(payload: Payload) -> None:
        nonlocal clock
        clock += timedelta(seconds=1)
        version = len(events)
        events.append(
            Event(
                id=event_id_at(stream, version, clock),
                stream=stream,
                version=version,
                occurred_at=clock,
                correlation_id="bench",
                actor=f"lab-{index}",
                payload=payload,
            )
        )

    add(RunStarted(task="t", lab=f"lab-{index}", policy="bench", budget=Budget(attempts=rounds)))
    for attempt in range(1, rounds + 1):
        config = {"path": "config.json", "content": f'{{"epochs": {attempt}}}'}
        calls: tuple[tuple[str, dict[str, str]], ...] = (
            ("write_file", config),
            ("python", {"script": "train.py"}),
            ("evaluate", {}),
        )
        for tool, args in calls:
            call = f"{tool}-{attempt}"
            add(ToolInvoked(call_id=call, tool=tool, args=args))
            add(ToolReturned(call_id=call, tool=tool, exit_code=0, duration_s=0.1))
        score = 0.5 + attempt / 100
        add(ExperimentScored(attempt=attempt, subtask_scores={"accuracy": score}, score=score))
        claimed = 0.99 if attempt % 3 == 0 else score
        claim = Claim(subtask="accuracy", metric="accuracy", value=claimed, attempt=attempt)
        add(
            PaperSubmitted(
                paper_id=f"p-{index}-{attempt}",
                task="t",
                title=f"paper {attempt} of run {index}",
                abstract="replay with herding exemplars",
                body="we replay exemplars chosen by herding " * 5,
                claims=[claim],
            )
        )
    return events


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--runs", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=10, help="papers a run")
    parser.add_argument("--page", type=int, default=5000, help="events read per page")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    made = [e for index in range(args.runs) for e in run_events(index, args.rounds)]
    events = sorted(made, key=lambda e: e.occurred_at)
    with tempfile.TemporaryDirectory(prefix="labrxiv-bench-") as tmp:
        store = EventStore.from_url(fresh_database(args.backend, Path(tmp), "archive"))
        try:
            for start in range(0, len(events), 20_000):
                store.append(events[start : start + 20_000])
            runner = ProjectionRunner(store, [ArchiveProjector()], page=args.page)
            best, cpu = float("inf"), float("inf")
            for _ in range(args.repeat):
                began, used = time.perf_counter(), time.process_time()
                runner.rebuild(1)
                best = min(best, time.perf_counter() - began)
                cpu = min(cpu, time.process_time() - used)
            with store.engine.connect() as conn:
                papers = conn.execute(select(func.count()).select_from(PAPERS)).scalar_one()
                c = PAPER_CLAIMS.c
                marks = conn.execute(
                    select(c.paper_id, c.verified, c.measured).order_by(c.paper_id)
                ).all()
        finally:
            store.engine.dispose()
            drop_database(args.backend)
    digest = hashlib.sha256(repr([tuple(m) for m in marks]).encode()).hexdigest()[:12]
    print(
        f"{args.backend}: {len(events):,} events, {papers:,} papers, pages of {args.page}:"
        f" best of {args.repeat} {best:.2f} s, {len(events) / best:,.0f} events/s,"
        f" {best / papers * 1e3:.2f} ms a paper ({cpu / papers * 1e3:.2f} of this process's"
        f" CPU); marks {digest}"
        f" ({sum(m.verified for m in marks):,} verified)"
    )


if __name__ == "__main__":
    main()
