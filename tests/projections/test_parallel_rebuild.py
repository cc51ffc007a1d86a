"""`labrxiv rebuild` on several cores (`projections.parallel_rebuild`): the read models split into
groups of near-equal cost, each group replaying the log in a process of its own, give
the rows a one-process rebuild gives; SQLite refuses it before anything is dropped; a
read model that fails in another process fails the rebuild, saying why."""

import multiprocessing
import os
import signal
import time
from collections.abc import Sequence
from pathlib import Path

import pytest
from sqlalchemy import Connection
from test_rebuild import checkpoints, mixed_log, model_rows
from typer.testing import CliRunner

from events import EventStore
from events.recorded import Recorded
from labrxiv.cli import app
from labrxiv.entry import EXIT_INTERRUPTED
from projections import parallel_rebuild
from projections.catalogue import all_projectors
from projections.checkpoints import read_checkpoints
from projections.parallel_rebuild import Elsewhere, OneWriter, default_jobs, split
from projections.projector import Projector
from projections.runner import ProjectionRunner, Rebuilt
from projections.runs import RunsProjector


class Refusing(Projector):
    """A read model whose apply fails (cheap, so a split sends it to another process)."""

    name = "refusing"
    tables = ()
    cost = 0.01

    def apply(self, conn: Connection, events: Sequence[Recorded]) -> None:
        raise RuntimeError(f"refusing read model: cannot apply {len(events)} events")


class Dying(Projector):
    """A read model whose process dies at its first page, with no word to the parent."""

    name = "dying"
    tables = ()
    cost = 0.01

    def apply(self, conn: Connection, events: Sequence[Recorded]) -> None:
        os._exit(3)


class Blocking(Projector):
    """Says it has begun (a file), then waits until its process is stopped."""

    name = "blocking"
    tables = ()
    cost = 0.01

    def __init__(self, began: Path) -> None:
        self.began = began

    def apply(self, conn: Connection, events: Sequence[Recorded]) -> None:
        self.began.touch()
        while True:
            time.sleep(0.05)


class Interrupted(Projector):
    """Once the other process's read model has begun, gets Ctrl-C (as its process would)."""

    name = "interrupted"
    tables = ()
    cost = 1.0

    def __init__(self, began: Path) -> None:
        self.began = began

    def apply(self, conn: Connection, events: Sequence[Recorded]) -> None:
        while not self.began.exists():
            time.sleep(0.01)
        raise KeyboardInterrupt


class Outlasting(Projector):
    """Applies its second batch only once every other process has ended, then counts on."""

    name = "outlasting"
    tables = ()
    cost = 1.0

    def __init__(self) -> None:
        self.applied = 0

    def apply(self, conn: Connection, events: Sequence[Recorded]) -> None:
        self.applied += 1
        if self.applied == 2:
            while any(child.is_alive() for child in multiprocessing.active_children()):
                time.sleep(0.01)


def logged(url: str) -> EventStore:
    store = EventStore.from_url(url)
    events = mixed_log()
    for at in range(0, len(events), 40):
        store.append(events[at : at + 40])
    return store


def test_split_balances_the_measured_costs_and_keeps_each_groups_order() -> None:
    projectors = all_projectors()
    for jobs in (1, 2, 3, len(projectors), len(projectors) + 4):
        groups = split(projectors, jobs)
        assert len(groups) == min(jobs, len(projectors))
        assert sorted(p.name for g in groups for p in g) == sorted(p.name for p in projectors)
        order = [p.name for p in projectors]
        for group in groups:  # the catalogue's order within a group
            assert [p.name for p in group] == sorted((p.name for p in group), key=order.index)
        costs = [sum(p.cost for p in g) for g in groups]
        assert costs[1:] == sorted(costs[1:], reverse=True)  # the spawned, costliest first
        # Longest processing time first: no group ends later than another by more than
        # the costliest read model it holds.
        assert max(costs) - min(costs) <= max(p.cost for p in projectors)
    two = split(projectors, 2)
    assert "findings" in [p.name for p in two[0]]  # the costliest, where imports are warm
    assert split([], 2) == []
    with pytest.raises(ValueError, match="at least 1"):
        split(projectors, 0)


def test_the_spawned_groups_late_start_moves_work_to_the_first() -> None:
    projectors = all_projectors()
    total = sum(p.cost for p in projectors)
    before = 0.0
    for lead in (0.0, 1.0, 2.5, 5.0):
        here, *spawned = split(projectors, 2, lead=lead)
        mine = sum(p.cost for p in here)
        theirs = sum(p.cost for g in spawned for p in g) + lead
        assert mine >= before  # never less work here for a later start there
        assert abs(mine - theirs) <= max(p.cost for p in projectors)  # they end together
        before = mine
    assert before > total / 2
    # A start later than the whole rebuild (a small log): the processes asked for are
    # still used, each given its share as if all began at once.
    assert split(projectors, 2, lead=total + 1) == split(projectors, 2)


def test_read_models_of_no_cost_make_no_empty_group() -> None:
    free = all_projectors()[:3]
    for projector in free:
        projector.cost = 0.0
    assert split(free, 2) == [free]  # one process does it all, and the split ends


@pytest.mark.postgres
def test_a_rebuild_in_several_processes_equals_one_in_one(
    pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = logged(pg_url)
    runner = ProjectionRunner(store, all_projectors(), page=7)
    runner.rebuild(1)
    alone = model_rows(store)
    assert all(alone.values()), "the mixed log fills every read model"
    head = store.max_position()
    for jobs in (2, 3):
        applied, processes = ProjectionRunner(store, all_projectors(), page=7).rebuild(jobs)
        assert applied == head * len(all_projectors()) and processes == jobs
        assert model_rows(store) == alone
        assert set(checkpoints(store).values()) == {head}
    # Shared out by default only where it pays: a log of 50,000 positions or more.
    assert default_jobs(store) == 1
    monkeypatch.setattr(parallel_rebuild, "PARALLEL_FROM", head)
    assert default_jobs(store) == min(os.cpu_count() or 1, 2)
    # As a user runs it.
    monkeypatch.setenv("LABRXIV_DATABASE_URL", pg_url)
    monkeypatch.setenv("LABRXIV_DATA_DIR", str(tmp_path))
    result = CliRunner().invoke(app, ["rebuild", "--jobs", "2"])
    assert result.exit_code == 0, result.output
    assert f"rebuilt {len(all_projectors())} read models from {head} events" in result.output
    assert "in 2 processes" in result.output
    assert model_rows(store) == alone
    store.engine.dispose()


@pytest.mark.postgres
def test_a_failure_elsewhere_stops_the_rebuild_at_the_next_batch_with_its_traceback(
    pg_url: str,
) -> None:
    store = logged(pg_url)
    here = Outlasting()
    runner = ProjectionRunner(store, [here, Refusing()], page=5, batch_pages=1)
    with pytest.raises(RuntimeError, match="refusing read model: cannot apply") as failed:
        runner.rebuild(2)
    # Told after the batch in which the other process had ended, not after the last.
    assert here.applied == 2 < store.count() // 5
    notes = "\n".join(getattr(failed.value, "__notes__", ()))
    assert "in the rebuild process for refusing" in notes
    assert "in apply" in notes and "Traceback" in notes
    assert multiprocessing.active_children() == []
    store.engine.dispose()


@pytest.mark.postgres
def test_a_process_that_dies_fails_the_rebuild_naming_its_read_models(pg_url: str) -> None:
    store = logged(pg_url)
    runner = ProjectionRunner(store, [RunsProjector(), Dying()], page=50)
    with pytest.raises(RuntimeError, match=r"rebuild process for dying died \(exit code 3\)"):
        runner.rebuild(2)
    assert multiprocessing.active_children() == []
    store.engine.dispose()


@pytest.mark.postgres
def test_ctrl_c_stops_the_other_processes_mid_page(pg_url: str, tmp_path: Path) -> None:
    store = logged(pg_url)
    began = tmp_path / "began"
    runner = ProjectionRunner(store, [Interrupted(began), Blocking(began)], page=50)
    with pytest.raises(KeyboardInterrupt):
        runner.rebuild(2)
    assert began.exists()  # the other process was in its page when it was stopped
    assert multiprocessing.active_children() == []
    with store.engine.connect() as conn:  # neither moved past its first page
        assert read_checkpoints(conn, ["interrupted", "blocking"]) == {
            "interrupted": 0,
            "blocking": 0,
        }
    store.engine.dispose()


@pytest.mark.postgres
def test_another_process_ignores_ctrl_c_from_its_start(pg_url: str) -> None:
    """A terminal sends Ctrl-C to the whole process group: a child still importing
    labrxiv died of it, printing its traceback. The parent alone decides (and stops it)."""
    store = logged(pg_url)
    child = Elsewhere(store, [RunsProjector()], page=50, batch_pages=1)
    try:
        os.kill(child.pid, signal.SIGINT)  # at once: while it starts
        assert child.result() == store.count()  # it went on and applied the whole log
    finally:
        child.stop()
    store.engine.dispose()


def test_ctrl_c_in_labrxiv_rebuild_says_what_is_left(
    sqlite_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    logged(sqlite_url)

    def interrupted(self: ProjectionRunner, jobs: int | None = None) -> Rebuilt:
        raise KeyboardInterrupt

    monkeypatch.setattr(ProjectionRunner, "rebuild", interrupted)
    monkeypatch.setenv("LABRXIV_DATABASE_URL", sqlite_url)
    monkeypatch.setenv("LABRXIV_DATA_DIR", str(tmp_path))
    result = CliRunner().invoke(app, ["rebuild"])
    assert result.exit_code == EXIT_INTERRUPTED
    assert "stopped: the read models are part-built" in result.output
    assert "Traceback" not in result.output


def test_a_sqlite_rebuild_runs_in_one_process_and_refuses_more(
    sqlite_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = logged(sqlite_url)
    runner = ProjectionRunner(store, all_projectors(), page=7)
    runner.catch_up()
    built = model_rows(store)
    assert default_jobs(store) == 1
    with pytest.raises(OneWriter, match="needs PostgreSQL"):
        runner.rebuild(2)
    assert model_rows(store) == built  # refused before anything was dropped

    monkeypatch.setenv("LABRXIV_DATABASE_URL", sqlite_url)
    monkeypatch.setenv("LABRXIV_DATA_DIR", str(tmp_path))
    result = CliRunner().invoke(app, ["rebuild", "--jobs", "2"])
    assert result.exit_code == 2
    assert "--jobs 2 needs PostgreSQL" in result.output
    assert model_rows(store) == built
    result = CliRunner().invoke(app, ["rebuild", "--jobs", "0"])
    assert result.exit_code == 2 and "--jobs" in result.output
    result = CliRunner().invoke(app, ["rebuild"])
    assert result.exit_code == 0, result.output
    assert "processes" not in result.output  # one process
    assert model_rows(store) == built
