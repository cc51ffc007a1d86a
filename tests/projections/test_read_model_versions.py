"""Read models built by an older labrxiv are rebuilt from the log, not read as they are.

Two ways a read model goes stale on an upgrade: its tables gained or lost columns (found
by comparing the stored columns), or its fold changed and the same events now give other
rows (its `Projector.version`, stored beside the checkpoints). Either way its tables and
checkpoint are dropped and it replays the log; the others are kept.
"""

from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import delete, inspect, text, update

from events import EventStore
from projections.catalogue import all_projectors
from projections.checkpoints import read_checkpoints
from projections.runner import ProjectionRunner
from projections.versions import VERSIONS
from workers.simulated import simulated_run

START = datetime(2026, 3, 1, tzinfo=UTC)
NAMES = [p.name for p in all_projectors()]


def built(url: str) -> EventStore:
    """A log of three simulated runs, every read model caught up."""
    store = EventStore.from_url(url)
    for index in range(3):
        store.append(list(simulated_run(f"run-v{index}", START, seed=index, campaign="cv")))
    ProjectionRunner(store, all_projectors()).catch_up()
    return store


def rows(store: EventStore, table: str) -> list[tuple[object, ...]]:
    with store.engine.connect() as conn:
        return [tuple(r) for r in conn.execute(text(f"SELECT * FROM {table} ORDER BY 1, 2"))]


def test_a_read_model_whose_fold_changed_is_rebuilt_and_the_others_kept(sqlite_url: str) -> None:
    store = built(sqlite_url)
    head = store.max_position()
    before = rows(store, "behaviour_runs")
    with store.engine.begin() as conn:
        # As an older labrxiv's fold left it: other rows, an older version.
        conn.execute(text("UPDATE behaviour_runs SET actions = actions + 100"))
        conn.execute(update(VERSIONS).where(VERSIONS.c.name == "behaviour").values(version=0))
    runner = ProjectionRunner(store, all_projectors())
    assert runner.create_schema() == ["behaviour"]
    with store.engine.connect() as conn:
        assert read_checkpoints(conn, NAMES) == {n: head for n in NAMES if n != "behaviour"}
    runner.catch_up()
    assert rows(store, "behaviour_runs") == before
    assert ProjectionRunner(store, all_projectors()).create_schema() == []


def test_a_database_from_before_versions_rebuilds_the_folds_changed_since(
    sqlite_url: str,
) -> None:
    """A database an older labrxiv built has no versions: its read models count as the
    first version of their fold, so those at a later one are rebuilt."""
    store = built(sqlite_url)
    with store.engine.begin() as conn:
        conn.execute(delete(VERSIONS))
    later = sorted(p.name for p in all_projectors() if p.version > 1)
    assert later, "no shipped fold has changed: nothing to test"
    assert sorted(ProjectionRunner(store, all_projectors()).create_schema()) == later
    assert sorted(ProjectionRunner(store, all_projectors()).create_schema()) == []


def test_a_new_database_records_every_version_and_resets_nothing(sqlite_url: str) -> None:
    store = EventStore.from_url(sqlite_url)
    assert ProjectionRunner(store, all_projectors()).create_schema() == []
    with store.engine.connect() as conn:
        stored = dict(conn.execute(VERSIONS.select()).all())
    assert stored == {p.name: p.version for p in all_projectors()}


@pytest.mark.postgres
def test_a_table_that_lost_a_column_is_rebuilt_on_postgres(pg_url: str) -> None:
    store = built(pg_url)
    before = rows(store, "runs")
    with store.engine.begin() as conn:
        conn.execute(text("ALTER TABLE runs DROP COLUMN revisions"))
    runner = ProjectionRunner(store, all_projectors())
    assert runner.create_schema() == ["runs"]
    runner.catch_up()
    assert rows(store, "runs") == before


def test_the_read_commands_rebuild_a_stale_read_model_before_reading(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`labrxiv runs` after an upgrade that changed the runs table listed no run ("no run
    yet"): the table had been dropped for a rebuild nobody ran (found running labrxiv from
    outside on a data folder of an older labrxiv)."""
    from typer.testing import CliRunner

    from labrxiv.cli import app

    store = built(f"sqlite:///{tmp_path / 'labrxiv.db'}")
    with store.engine.begin() as conn:
        conn.execute(text("ALTER TABLE runs DROP COLUMN revisions"))
    store.engine.dispose()
    monkeypatch.setenv("LABRXIV_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("COLUMNS", "200")
    said = CliRunner().invoke(app, ["runs"])
    assert said.exit_code == 0, said.output
    assert "no run yet" not in said.output
    assert all(f"run-v{index}" in said.stdout for index in range(3)), said.stdout
    assert "read model runs: table(s) runs changed since it was built" in said.output


def test_rebuild_refuses_two_jobs_on_sqlite_before_it_drops_a_stale_read_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`labrxiv rebuild` replayed a stale read model first (as the read commands do), so a
    refused `--jobs 2` had already dropped it, and an accepted rebuild replayed it twice."""
    from typer.testing import CliRunner

    from labrxiv.cli import app

    store = built(f"sqlite:///{tmp_path / 'labrxiv.db'}")
    with store.engine.begin() as conn:
        conn.execute(text("ALTER TABLE runs DROP COLUMN revisions"))
    monkeypatch.setenv("LABRXIV_DATA_DIR", str(tmp_path))
    said = CliRunner().invoke(app, ["rebuild", "--jobs", "2"])
    assert said.exit_code == 2, said.output
    with store.engine.connect() as conn:
        columns = {c["name"] for c in inspect(conn).get_columns("runs")}
    assert "revisions" not in columns  # untouched
    said = CliRunner().invoke(app, ["rebuild"])
    assert said.exit_code == 0, said.output
    assert "rebuilding it from the log" in said.output  # dropped once, by the rebuild
    assert len(rows(store, "runs")) == 3
