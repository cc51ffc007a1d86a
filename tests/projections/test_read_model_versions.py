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
from tests.simulated import simulated_run

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


def test_a_read_command_finishes_a_rebuild_that_was_cut_short(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stale read model dropped by one read command and replayed only part of the way
    (Ctrl-C in a long `labrxiv runs`) was shown half-built by the next one, with no
    warning: its version was already recorded, so nothing said it was unfinished."""
    from typer.testing import CliRunner

    from labrxiv.cli import app

    store = built(f"sqlite:///{tmp_path / 'labrxiv.db'}")
    with store.engine.begin() as conn:
        conn.execute(text("ALTER TABLE runs DROP COLUMN revisions"))
    runs = [p for p in all_projectors() if p.name == "runs"]
    assert ProjectionRunner(store, all_projectors()).create_schema() == ["runs"]
    ProjectionRunner(store, runs).catch_up(limit=5)  # then cut short, in the first run
    assert len(rows(store, "runs")) == 1
    store.engine.dispose()
    monkeypatch.setenv("LABRXIV_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("COLUMNS", "300")
    status = CliRunner().invoke(app, ["status"])  # shows it, does not wait for it
    assert status.exit_code == 0, status.output
    head = store.max_position()
    assert f"at 5, {head - 5} behind (rebuilding from 0: whole again at {head};" in status.output
    said = CliRunner().invoke(app, ["runs"])
    assert said.exit_code == 0, said.output
    assert all(f"run-v{index}" in said.stdout for index in range(3)), said.stdout
    assert "read model runs: its rebuild is at position 5 of " in said.output
    again = CliRunner().invoke(app, ["runs"])
    assert again.exit_code == 0, again.output
    assert "rebuild" not in again.output  # the mark was cleared once it was whole
    status = CliRunner().invoke(app, ["status"])
    assert "rebuilding" not in status.output


def test_a_rebuild_interrupted_is_finished_by_the_next_reader(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = built(sqlite_url)
    before = {table: rows(store, table) for table in ("runs", "ledger", "findings_runs")}
    pages = 0

    def apply_then_stop(self: object, conn: object, events: object) -> None:
        nonlocal pages
        pages += 1
        if pages == 2:
            raise KeyboardInterrupt
        original(self, conn, events)

    runs = next(p for p in all_projectors() if p.name == "runs")
    original = type(runs).apply
    monkeypatch.setattr(type(runs), "apply", apply_then_stop)
    with pytest.raises(KeyboardInterrupt):
        ProjectionRunner(store, all_projectors(), page=17, batch_pages=1).rebuild(jobs=1)
    monkeypatch.setattr(type(runs), "apply", original)
    reader = ProjectionRunner(store, all_projectors())
    assert reader.create_schema() == []  # not stale: the versions are today's
    assert reader.finish_rebuilds() == sorted(NAMES)
    assert {table: rows(store, table) for table in before} == before
    assert reader.finish_rebuilds() == []
    # A whole rebuild leaves no mark behind.
    ProjectionRunner(store, all_projectors()).rebuild(jobs=1)
    assert ProjectionRunner(store, all_projectors()).finish_rebuilds() == []


def test_a_read_model_that_gained_a_table_is_rebuilt(sqlite_url: str) -> None:
    store = built(sqlite_url)
    before = rows(store, "findings_runs")
    with store.engine.begin() as conn:
        conn.execute(text("DROP TABLE findings_runs"))  # as if added since it was built
    runner = ProjectionRunner(store, all_projectors())
    assert runner.create_schema() == ["findings"]
    runner.catch_up()
    assert rows(store, "findings_runs") == before


def test_a_database_from_before_the_versions_table_rebuilds_the_folds_changed_since(
    sqlite_url: str,
) -> None:
    store = built(sqlite_url)
    with store.engine.begin() as conn:
        conn.execute(text("DROP TABLE projection_versions"))
    later = sorted(p.name for p in all_projectors() if p.version > 1)
    assert sorted(ProjectionRunner(store, all_projectors()).create_schema()) == later
    with store.engine.connect() as conn:
        stored = dict(conn.execute(VERSIONS.select()).all())
    assert stored == {p.name: p.version for p in all_projectors()}


def test_a_process_starting_on_a_new_database_never_sees_tables_without_versions(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The tables were committed, then their versions in a second transaction: a process
    starting in between saw read models with no version and reset runs and behaviour."""
    import projections.runner as runner_module

    store = EventStore.from_url(sqlite_url)
    other = EventStore.from_url(sqlite_url)
    seen: list[list[str]] = []
    create = runner_module.create_tables

    def create_then_look(*args: object, **kwargs: object) -> None:
        create(*args, **kwargs)  # type: ignore[arg-type]
        if not seen:  # what another process starting right now would do
            seen.append(["(looking)"])
            seen[0] = ProjectionRunner(other, all_projectors()).create_schema()

    monkeypatch.setattr(runner_module, "create_tables", create_then_look)
    assert ProjectionRunner(store, all_projectors()).create_schema() == []
    assert seen == [[]]


@pytest.mark.postgres
def test_two_processes_finding_a_read_model_stale_reset_it_once(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both see `runs` stale and both go to reset it at once: the second, once it holds the
    database, finds it rebuilt by the first's reset and leaves it."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    store = built(pg_url)
    with store.engine.begin() as conn:
        conn.execute(text("ALTER TABLE runs DROP COLUMN revisions"))
    both_stale = threading.Barrier(2, timeout=30)
    reset = ProjectionRunner._reset

    def reset_together(self: ProjectionRunner, projector: object, recheck: bool = False) -> bool:
        both_stale.wait()  # each has found it stale before either resets
        return reset(self, projector, recheck)  # type: ignore[arg-type]

    monkeypatch.setattr(ProjectionRunner, "_reset", reset_together)

    def start() -> list[str]:
        return ProjectionRunner(EventStore.from_url(pg_url), all_projectors()).create_schema()

    with ThreadPoolExecutor(2) as pool:
        results = [f.result() for f in [pool.submit(start), pool.submit(start)]]
    assert sorted(results) == [[], ["runs"]]


def test_a_reader_finishes_a_rebuild_another_process_is_replaying(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read command's catch-up stops when another process (the projector service after
    an upgrade) moves the checkpoint first: one catch-up left the read model half-built
    and the command showed it so."""
    store = built(sqlite_url)
    before = rows(store, "runs")
    runs = [p for p in all_projectors() if p.name == "runs"]
    with store.engine.begin() as conn:
        conn.execute(text("ALTER TABLE runs DROP COLUMN revisions"))
    assert ProjectionRunner(store, all_projectors()).create_schema() == ["runs"]
    service = ProjectionRunner(EventStore.from_url(sqlite_url), runs)
    apply_page = ProjectionRunner._apply_page
    turns: list[int] = []

    def service_first(self: ProjectionRunner, *args: object) -> object:
        if not turns:  # the service applies a page just before the reader's first
            turns.append(0)
            turns[0] = service.catch_up(limit=5)
        return apply_page(self, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(ProjectionRunner, "_apply_page", service_first)
    reader = ProjectionRunner(store, all_projectors(), page=17)
    assert reader.finish_rebuilds() == ["runs"]
    assert turns == [5]
    assert rows(store, "runs") == before
    assert [lag.rebuilding_to for lag in reader.lag()] == [None] * len(NAMES)


@pytest.mark.postgres
def test_clearing_a_reached_mark_never_deletes_the_mark_of_a_reset_meanwhile(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read command clearing the mark of a finished rebuild, and `labrxiv rebuild`
    resetting the same read model meanwhile on a quiet log (the same head): the clear
    deleted the new mark, and the rebuild, then cut short, was shown as whole."""
    import threading

    import projections.runner as runner_module
    from projections.rebuilding import rebuilding

    store = built(pg_url)
    head = store.max_position()
    runs = next(p for p in all_projectors() if p.name == "runs")
    reader = ProjectionRunner(store, [runs])
    assert reader._reset(runs)
    reader.catch_up()  # the mark is reached
    with store.engine.connect() as conn:
        marks = rebuilding(conn, ["runs"])
    assert marks == {"runs": head}
    clear = runner_module.clear_rebuilt
    threads: list[threading.Thread] = []

    def reset_meanwhile(*args: object) -> None:
        other = ProjectionRunner(EventStore.from_url(pg_url), [runs])
        resetting = threading.Thread(target=other._reset, args=(runs,))
        resetting.start()
        threads.append(resetting)
        resetting.join(timeout=2)  # it waits for the clear to end, or commits now
        clear(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(runner_module, "clear_rebuilt", reset_meanwhile)
    reader._clear_rebuilt(marks)
    threads[0].join(timeout=30)
    with store.engine.connect() as conn:
        assert rebuilding(conn, ["runs"]) == {"runs": head}
        assert read_checkpoints(conn, ["runs"]) == {}


def test_a_read_model_new_to_a_log_is_built_before_the_read_commands_read(
    sqlite_url: str,
) -> None:
    """A read model added since the database was built (or built so far only by runners
    of other read models) has no table and no checkpoint on a log with events: read
    commands build it before they read, not show it empty."""
    store = built(sqlite_url)
    (behaviour,) = [p for p in all_projectors() if p.name == "behaviour"]
    before = {t.name: rows(store, t.name) for t in behaviour.tables}
    assert before["behaviour_runs"], "the simulated runs are in the behaviour read model"
    with store.engine.begin() as conn:  # as an older labrxiv, without it, left the database
        for table in behaviour.tables:
            conn.execute(text(f"DROP TABLE {table.name}"))
        conn.execute(text("DELETE FROM projection_checkpoints WHERE name = 'behaviour'"))
        conn.execute(delete(VERSIONS).where(VERSIONS.c.name == "behaviour"))
    runner = ProjectionRunner(store, all_projectors())
    assert runner.finish_rebuilds(announced=runner.create_schema()) == ["behaviour"]
    assert {t.name: rows(store, t.name) for t in behaviour.tables} == before
    assert ProjectionRunner(store, all_projectors()).create_schema() == []


def test_an_empty_log_builds_nothing_new(sqlite_url: str) -> None:
    store = EventStore.from_url(sqlite_url)
    runner = ProjectionRunner(store, all_projectors())
    assert runner.create_schema() == []
    assert runner.finish_rebuilds() == []
