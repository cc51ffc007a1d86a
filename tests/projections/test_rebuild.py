"""The read models built incrementally equal the ones rebuilt from position 0, row for row.

Incrementally means: appended in many small batches of interleaved streams, with the
projector catching up in between with small pages and limits; or a projector process
killed mid-way and restarted; or two projector processes running at once.
"""

import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import func, select

from events import Event, EventStore
from events.ids import derived_id
from events.payloads import (
    Budget,
    BudgetExceeded,
    CampaignFinished,
    CampaignStarted,
    Claim,
    ExperimentScored,
    IntegrityViolation,
    PaperDecided,
    PapersRetrieved,
    PaperSubmitted,
    Payload,
    ReviewForm,
    ReviewSubmitted,
    RunFinished,
    RunStarted,
    ToolInvoked,
    ToolReturned,
)
from events.store import EVENTS
from projections.catalogue import all_projectors
from projections.checkpoints import read_checkpoint
from projections.runner import ProjectionRunner
from projections.runs import RUNS
from tests.simulated import simulated_run

START = datetime(2026, 1, 1, tzinfo=UTC)


def runs_rows(store: EventStore) -> list[tuple[object, ...]]:
    """Every column of every `runs` row, in primary-key order."""
    with store.engine.connect() as conn:
        return [tuple(r) for r in conn.execute(select(RUNS).order_by(RUNS.c.stream))]


def model_rows(store: EventStore) -> dict[str, list[tuple[object, ...]]]:
    """Every row of every read model's tables, in primary-key order (all columns if none)."""
    rows = {}
    with store.engine.connect() as conn:
        for projector in all_projectors():
            for table in projector.tables:
                order = list(table.primary_key.columns) or list(table.columns)
                rows[table.name] = [tuple(r) for r in conn.execute(select(table).order_by(*order))]
    return rows


def checkpoint(store: EventStore, name: str = "runs") -> int:
    with store.engine.connect() as conn:
        return read_checkpoint(conn, name)


def checkpoints(store: EventStore) -> dict[str, int]:
    """Every projector's checkpoint."""
    with store.engine.connect() as conn:
        return {p.name: read_checkpoint(conn, p.name) for p in all_projectors()}


def stream_lengths(store: EventStore) -> dict[str, int]:
    """Events per `run-*` stream, counted in the log itself."""
    query = (
        select(EVENTS.c.stream, func.count())
        .where(EVENTS.c.stream.like("run-%"))
        .group_by(EVENTS.c.stream)
    )
    with store.engine.connect() as conn:
        return {stream: count for stream, count in conn.execute(query)}


def event_counts(store: EventStore) -> dict[str, int]:
    """`event_count` per run, as the read model has it."""
    with store.engine.connect() as conn:
        return dict(conn.execute(select(RUNS.c.stream, RUNS.c.event_count)).all())


def campaign(name: str, at: datetime, runs: int) -> tuple[Event, Event]:
    """A campaign's started and finished events."""
    stream = f"campaign-{name}"
    started = Event(
        id=derived_id(f"{stream}:0", at),
        stream=stream,
        version=0,
        occurred_at=at,
        correlation_id=name,
        actor="operator",
        payload=CampaignStarted(task="simulated-task", labs=runs, mode="archive", seed=7),
    )
    finished_at = at + timedelta(hours=2)
    finished = Event(
        id=derived_id(f"{stream}:1", finished_at),
        stream=stream,
        version=1,
        occurred_at=finished_at,
        correlation_id=name,
        actor="operator",
        payload=CampaignFinished(reason="done"),
    )
    return started, finished


def writer_run(name: str, campaign: str, start: datetime, cites: list[str]) -> list[Event]:
    """A run that reads the archive, scores twice, publishes a paper, is refused once and
    runs out of budget: the events the archive, ledger and curve read models fold."""
    stream = f"run-{name}"
    lab = f"lab-{name}"
    payloads: list[Payload] = [
        RunStarted(
            task="simulated-task",
            lab=lab,
            policy="simulated",
            budget=Budget(attempts=2),
            reads_archive=True,
        ),
        ToolInvoked(call_id="c0", tool="search_archive", args={"query": "baseline"}),
        PapersRetrieved(query="baseline", paper_ids=cites),
        ToolReturned(call_id="c0", tool="search_archive", exit_code=0, duration_s=0.1),
        ExperimentScored(attempt=1, subtask_scores={"accuracy": 0.5}, score=0.5),
        ExperimentScored(
            attempt=2, subtask_scores={"accuracy": 0.7}, score=0.7, normalized_score=0.74
        ),
        PaperSubmitted(
            paper_id=f"paper-{name}",
            task="simulated-task",
            title=f"Results of {name}",
            abstract="We report what we measured.",
            body="# Method\n\nA search.\n",
            claims=[Claim(subtask="accuracy", metric="accuracy", value=0.7, attempt=2)],
            cited=cites,
        ),
        IntegrityViolation(kind="path_traversal", detail="../hidden", tool="read_file"),
        BudgetExceeded(budget="attempts", limit=2, used=2),
        RunFinished(reason="budget", detail="attempts limit"),
    ]
    return [
        Event(
            id=derived_id(f"{stream}:{version}", start + timedelta(seconds=version)),
            stream=stream,
            version=version,
            occurred_at=start + timedelta(seconds=version),
            correlation_id=campaign,
            actor=lab,
            payload=payload,
        )
        for version, payload in enumerate(payloads)
    ]


def reviews_of(paper: Event, ratings: Sequence[int]) -> list[Event]:
    """A paper's reviews (one per rating) and its decision, after the paper."""
    assert isinstance(paper.payload, PaperSubmitted)
    paper_id = paper.payload.paper_id
    stream = f"review-{paper_id}"
    payloads: list[Payload] = [
        ReviewSubmitted(
            paper_id=paper_id,
            reviewer=f"grounded-{index}",
            kind="grounded",
            form=ReviewForm(
                summary=f"Review {index} of {paper_id}.",
                strengths=["measured"],
                weaknesses=[],
                questions=["why?"] if index else [],
                soundness=4,
                presentation=3,
                contribution=2 + index % 2,
                rating=rating,
                confidence=5,
                ethics_flag=False,
            ),
            relied_on=[paper.id],
        )
        for index, rating in enumerate(ratings)
    ]
    events = [
        Event(
            id=derived_id(f"{stream}:{version}", paper.occurred_at),
            stream=stream,
            version=version,
            occurred_at=paper.occurred_at + timedelta(seconds=0.5 + version / 10),
            causation_id=paper.id,
            correlation_id=paper.correlation_id,
            actor=payload.reviewer,  # type: ignore[attr-defined]
            payload=payload,
        )
        for version, payload in enumerate(payloads)
    ]
    decided = PaperDecided(
        paper_id=paper_id,
        decision="accept" if sum(ratings) / len(ratings) >= 6 else "reject",
        reason="by the numbers",
        reviews=[e.id for e in events],
        mean_rating=sum(ratings) / len(ratings),
    )
    version = len(events)
    events.append(
        Event(
            id=derived_id(f"{stream}:{version}", paper.occurred_at),
            stream=stream,
            version=version,
            occurred_at=paper.occurred_at + timedelta(seconds=1),
            causation_id=paper.id,
            correlation_id=paper.correlation_id,
            actor="meta-reviewer",
            payload=decided,
        )
    )
    return events


def mixed_log(seed: int = 1) -> list[Event]:
    """Interleaved runs of two campaigns and some lone ones; a few runs left unfinished;
    runs that read and write the archive; reviews and decisions of their papers."""
    rng = random.Random(seed)
    events: list[Event] = []
    for name, runs in (("camp-a", 4), ("camp-b", 3)):
        events.extend(campaign(name, START, runs))
        for index in range(runs):
            run = list(
                simulated_run(
                    f"{name}-{index}",
                    START + timedelta(seconds=rng.uniform(0, 20)),
                    attempts=rng.randint(1, 7),
                    seed=index,
                    campaign=name,
                )
            )
            events.extend(run if index % 3 else run[: rng.randint(1, len(run))])
    for index in range(5):
        start = START + timedelta(seconds=rng.uniform(0, 30))
        events.extend(simulated_run(f"lone-{index}", start, attempts=4, seed=100 + index))
    cites: list[str] = []
    for index in range(3):
        start = START + timedelta(seconds=5 + 12 * index)
        run = writer_run(f"writer-{index}", "camp-a", start, list(cites))
        events.extend(run)
        cites.append(f"paper-writer-{index}")
        if index < 2:  # the last paper stays unreviewed
            paper = next(e for e in run if isinstance(e.payload, PaperSubmitted))
            events.extend(reviews_of(paper, [7, 5 + index]))
    # Time order interleaves the streams and keeps each stream's versions in order.
    return sorted(events, key=lambda e: e.occurred_at)


def batches(events: Sequence[Event], rng: random.Random) -> Iterator[list[Event]]:
    """`events` cut into batches of 1 to 9."""
    at = 0
    while at < len(events):
        size = rng.randint(1, 9)
        yield list(events[at : at + size])
        at += size


def test_incremental_equals_rebuild_in_small_batches(store_url: str) -> None:
    store = EventStore.from_url(store_url)
    runner = ProjectionRunner(store, all_projectors(), page=3)
    rng = random.Random(5)
    events = mixed_log()
    for batch in batches(events, rng):
        store.append(batch)
        if rng.random() < 0.6:
            runner.page = rng.choice([1, 2, 3, 5, 8])
            runner.catch_up(limit=rng.choice([1, 2, 4, 7, None]))
    runner.catch_up()

    incremental = model_rows(store)
    empty = [name for name, rows in incremental.items() if not rows]
    assert not empty, f"the mixed log should fill every read model; empty: {empty}"
    head = store.max_position()
    assert head == len(events)
    assert set(checkpoints(store).values()) == {head}
    assert event_counts(store) == stream_lengths(store)
    runs = runs_rows(store)
    statuses = {row[RUNS.c.keys().index("status")] for row in runs}
    assert statuses == {"running", "finished"}, "the log should leave some runs unfinished"
    campaigns = {row[RUNS.c.keys().index("campaign")] for row in runs}
    assert campaigns == {"camp-a", "camp-b", None}

    runner.rebuild()
    assert model_rows(store) == incremental
    assert set(checkpoints(store).values()) == {head}
    runner.rebuild()  # a rebuild of a rebuild changes nothing
    assert model_rows(store) == incremental


def test_read_models_at_different_checkpoints_catch_up_to_the_rebuild(store_url: str) -> None:
    """Read models applied up to different positions (the campaign watcher keeps `runs`
    ahead of the others; a read model new to the database starts at 0) each catch up
    from their own checkpoint, those at the same one sharing pages, and equal the
    rebuild."""
    store = EventStore.from_url(store_url)
    store.append(mixed_log(seed=2))
    by_name = {p.name: p for p in all_projectors()}
    ProjectionRunner(store, [by_name["runs"]], page=4).catch_up(limit=41)
    ProjectionRunner(store, [by_name["ledger"], by_name["curves"]], page=3).catch_up(limit=17)
    assert len(set(checkpoints(store).values())) == 3

    runner = ProjectionRunner(store, all_projectors(), page=5)
    runner.catch_up()
    assert set(checkpoints(store).values()) == {store.max_position()}
    incremental = model_rows(store)
    runner.rebuild()
    assert model_rows(store) == incremental
    store.engine.dispose()


# -- projector processes ------------------------------------------------------

BIG_LOG_RUNS = 1200
"""Runs of 17 events each: a log of 20,400 events."""


def big_log(store: EventStore) -> int:
    """Append a log of about 20k events in large batches; returns its head."""
    events: list[Event] = []
    for index in range(BIG_LOG_RUNS):
        events.extend(simulated_run(f"big-{index}", START, attempts=5, seed=index))
    for at in range(0, len(events), 2000):
        store.append(events[at : at + 2000])
    return store.max_position()


def labrxiv_command(*args: str) -> list[str]:
    """The installed console script, or the module when run outside the virtualenv."""
    script = Path(sys.executable).with_name("labrxiv")
    return [str(script), *args] if script.exists() else [sys.executable, "-m", "labrxiv.cli", *args]


def cli_env(database_url: str, data_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LABRXIV_")}
    env.update(
        LABRXIV_DATABASE_URL=database_url,
        LABRXIV_DATA_DIR=str(data_dir),
        LABRXIV_LOG_LEVEL="WARNING",
    )
    return env


def start_projector(url: str, tmp_path: Path, name: str, *args: str) -> subprocess.Popen[bytes]:
    log = (tmp_path / f"{name}.log").open("wb")
    return subprocess.Popen(
        labrxiv_command("projector", "--page", "50", *args),
        env=cli_env(url, tmp_path),
        cwd=tmp_path,
        stdout=log,
        stderr=subprocess.STDOUT,
    )


def output_of(tmp_path: Path, name: str) -> str:
    return (tmp_path / f"{name}.log").read_text(errors="replace")


@pytest.mark.slow
def test_killed_projector_resumes_and_equals_rebuild(store_url: str, tmp_path: Path) -> None:
    store = EventStore.from_url(store_url)
    runner = ProjectionRunner(store, all_projectors())
    runner.create_schema()
    head = big_log(store)

    proc = start_projector(store_url, tmp_path, "killed")
    try:
        deadline = time.monotonic() + 120
        while checkpoint(store) == 0 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.002)
        assert proc.poll() is None, f"projector exited early:\n{output_of(tmp_path, 'killed')}"
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL

    killed_at = checkpoint(store)
    assert 0 < killed_at < head, f"killed at {killed_at} of {head}: not mid-way"
    # Projectors catch up one after the other; `runs` comes first.
    left = sum(head - position for position in checkpoints(store).values())
    # What the dead process committed is consistent: the rows hold exactly the
    # events up to its checkpoint, no more (a half-applied page) and no less.
    with store.engine.connect() as conn:
        applied = conn.execute(
            select(func.count()).select_from(EVENTS).where(EVENTS.c.position <= killed_at)
        ).scalar()
    assert sum(event_counts(store).values()) == applied

    done = subprocess.run(
        labrxiv_command("projector", "--once", "--page", "50"),
        env=cli_env(store_url, tmp_path),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"applied {left} events" in done.stdout
    assert set(checkpoints(store).values()) == {head}

    incremental = model_rows(store)
    assert len(incremental["runs"]) == BIG_LOG_RUNS
    assert event_counts(store) == stream_lengths(store)
    runner.rebuild()
    assert model_rows(store) == incremental


@pytest.mark.slow
def test_two_projector_processes_do_not_double_apply(store_url: str, tmp_path: Path) -> None:
    store = EventStore.from_url(store_url)
    runner = ProjectionRunner(store, all_projectors())
    runner.create_schema()
    head = big_log(store)

    procs = [start_projector(store_url, tmp_path, f"p{i}", "--poll", "0.05") for i in (0, 1)]
    try:
        deadline = time.monotonic() + 240
        while min(checkpoints(store).values()) < head and time.monotonic() < deadline:
            assert all(p.poll() is None for p in procs), "\n".join(
                output_of(tmp_path, f"p{i}") for i in (0, 1)
            )
            time.sleep(0.05)
        time.sleep(0.3)  # let both poll once more at the head
        for index, proc in enumerate(procs):
            assert proc.poll() is None, f"p{index} died:\n{output_of(tmp_path, f'p{index}')}"
    finally:
        for proc in procs:
            proc.kill()
            proc.wait(timeout=30)

    assert set(checkpoints(store).values()) == {head}
    lengths = stream_lengths(store)
    assert len(lengths) == BIG_LOG_RUNS
    assert event_counts(store) == lengths
    incremental = model_rows(store)
    runner.rebuild()
    assert model_rows(store) == incremental


def test_a_read_model_built_by_an_older_labrxiv_is_rebuilt_from_the_log(
    store_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The ledger table lacks a column it gained since (as after an upgrade): the next
    catch-up rebuilds that read model instead of failing on the missing column."""
    store = EventStore.from_url(store_url)
    store.append(mixed_log())
    ProjectionRunner(store, all_projectors()).catch_up()
    expected = model_rows(store)
    with store.engine.begin() as conn:
        conn.exec_driver_sql("ALTER TABLE ledger DROP COLUMN grader_calls")
        conn.exec_driver_sql("DELETE FROM ledger")  # what an old build could not have held
    runner = ProjectionRunner(store, all_projectors())
    runner.catch_up()
    assert model_rows(store) == expected
    assert "read model ledger: table(s) ledger changed" in caplog.text
