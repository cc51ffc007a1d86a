"""A tool call's research phase on its ledger row (`labrxiv_actions_total{phase}`): the
run's last `phase.entered` when it was invoked, a fork's parent's at the fork point;
the same whether the ledger folds the log in one page, page by page, or a projector
starts mid-run and looks the phase up in the log."""

from collections.abc import Iterator

import pytest
from handmade_log import RunLog
from sqlalchemy import select

from events import EventStore
from events.payloads import ForkPoint, PhaseEntered, RunStarted
from projections.ledger import LEDGER, LedgerProjector
from projections.runner import ProjectionRunner


@pytest.fixture
def store(store_url: str) -> Iterator[EventStore]:
    store = EventStore.from_url(store_url)
    yield store
    store.engine.dispose()


def phased_logs() -> tuple[RunLog, RunLog, RunLog]:
    """An llm-like run through two phases, a run without phases, and a fork of the first
    taken in its experiment phase that enters writeup on its own."""
    a = RunLog("phased", "lab-a")
    a.start(0)
    a.tool("t0", "read_file", 1, 1)  # before any phase
    a.add(PhaseEntered(phase="plan"), 3)
    a.tool("t1", "read_file", 4, 1)
    a.add(PhaseEntered(phase="experiment"), 6)
    a.tool("t2", "python", 7, 1)
    fork_version = a.events[-1].version
    a.tool("t3", "python", 9, 1)
    b = RunLog("plain", "lab-b")
    b.start(0)
    b.tool("u0", "bash", 2, 1)
    f = RunLog("fork", "lab-a")
    point = ForkPoint(run=a.stream, step=4, version=fork_version)
    f.add(RunStarted(task="digits", lab="lab-a", policy="handmade", forked_from=point), 20)
    f.tool("t3", "python", 21, 1)  # inherits experiment
    f.add(PhaseEntered(phase="writeup"), 23)
    f.tool("t4", "write_file", 24, 1)
    return a, b, f


EXPECTED = {
    ("run-phased", "t0"): None,
    ("run-phased", "t1"): "plan",
    ("run-phased", "t2"): "experiment",
    ("run-phased", "t3"): "experiment",
    ("run-plain", "u0"): None,
    ("run-fork", "t3"): "experiment",
    ("run-fork", "t4"): "writeup",
}


def phases(store: EventStore) -> dict[tuple[str, str], str | None]:
    with store.engine.connect() as conn:
        rows = conn.execute(select(LEDGER).where(LEDGER.c.kind == "tool")).all()
    return {(r.run, r.call_id): r.phase for r in rows}


def test_each_tool_call_has_its_runs_phase_in_one_page_or_many(store: EventStore) -> None:
    a, b, f = phased_logs()
    store.append(a.events + b.events)
    store.append(f.events)
    ProjectionRunner(store, [LedgerProjector()]).catch_up()
    assert phases(store) == EXPECTED
    paged = EventStore.from_url(str(store.engine.url), create=False)
    runner = ProjectionRunner(paged, [LedgerProjector()], page=1, batch_pages=1)
    runner.rebuild()
    assert phases(store) == EXPECTED


def test_a_projector_started_mid_run_looks_the_phase_up_in_the_log(store: EventStore) -> None:
    a, b, f = phased_logs()
    half = 7  # run.started, t0, plan, t1, experiment: the projector stops here
    store.append(a.events[:half])
    ProjectionRunner(store, [LedgerProjector()]).catch_up()
    store.append(a.events[half:] + b.events)  # the next page starts with t2 (experiment)
    store.append(f.events[:1])  # the fork's start
    ProjectionRunner(store, [LedgerProjector()]).catch_up()  # a new process: knows nothing
    store.append(f.events[1:])  # its first call, before a phase of its own: its parent's
    ProjectionRunner(store, [LedgerProjector()]).catch_up()
    assert phases(store) == EXPECTED
