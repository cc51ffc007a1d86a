"""`labrxiv rebuild` on several cores (`projections.parallel`): the read models split into
groups of near-equal cost, each group replaying the log in a process of its own, give
the rows a one-process rebuild gives; SQLite refuses it before anything is dropped; a
read model that fails in another process fails the rebuild, saying why."""

import os
from collections.abc import Sequence
from pathlib import Path

import pytest
from sqlalchemy import Connection
from test_rebuild import checkpoints, mixed_log, model_rows
from typer.testing import CliRunner

from events import EventStore
from events.recorded import Recorded
from labrxiv.cli import app
from projections import parallel
from projections.catalogue import all_projectors
from projections.parallel import default_jobs, split
from projections.projector import Projector
from projections.runner import ProjectionRunner
from projections.runs import RunsProjector


class Refusing(Projector):
    """A read model whose apply fails (cheap, so a split sends it to another process)."""

    name = "refusing"
    tables = ()
    cost = 0.01

    def apply(self, conn: Connection, events: Sequence[Recorded]) -> None:
        raise RuntimeError(f"refusing read model: cannot apply {len(events)} events")


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
        assert costs == sorted(costs, reverse=True)  # the costliest first: this process's
    two = split(projectors, 2)
    assert [p.name for p in two[0]] == ["findings"]  # alone it costs more than the rest
    with pytest.raises(ValueError, match="at least 1"):
        split(projectors, 0)


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
        applied = ProjectionRunner(store, all_projectors(), page=7).rebuild(jobs)
        assert applied == head * len(all_projectors())
        assert model_rows(store) == alone
        assert set(checkpoints(store).values()) == {head}
    # Shared out by default only where it pays: a log of 50,000 positions or more.
    assert default_jobs(store) == 1
    monkeypatch.setattr(parallel, "PARALLEL_FROM", head)
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
def test_a_read_model_failing_in_another_process_fails_the_rebuild(pg_url: str) -> None:
    store = logged(pg_url)
    runner = ProjectionRunner(store, [RunsProjector(), Refusing()], page=50)
    with pytest.raises(RuntimeError, match="refusing read model: cannot apply"):
        runner.rebuild(2)
    store.engine.dispose()


def test_a_sqlite_rebuild_runs_in_one_process_and_refuses_more(
    sqlite_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = logged(sqlite_url)
    runner = ProjectionRunner(store, all_projectors(), page=7)
    runner.catch_up()
    built = model_rows(store)
    assert default_jobs(store) == 1
    with pytest.raises(ValueError, match="needs PostgreSQL"):
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
