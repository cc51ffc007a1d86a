"""A new demo clears its folder only of a finished demo's log: anything recorded there
since (a campaign or fork run with LABRXIV_DATA_DIR on it, as `make demo` suggests) or a
demo stopped before its end is moved aside, not deleted."""

import os
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest
from typer.testing import CliRunner

from events import EventStore
from events.ids import new_id, utcnow
from labrxiv.cli import app
from labrxiv.demo_folder import LOG, MARK, make_room, mark_finished
from tests.simulated import simulated_run


def _log(folder: Path, runs: int) -> EventStore:
    folder.mkdir(parents=True, exist_ok=True)
    store = EventStore.from_url(f"sqlite:///{folder / LOG}")
    for _ in range(runs):
        store.append(list(simulated_run(new_id().hex[:8], utcnow(), attempts=1)))
    return store


def test_no_folder_is_nothing_to_clear(tmp_path: Path) -> None:
    assert make_room(tmp_path / "demo") is None


def test_a_finished_demo_untouched_since_is_deleted(tmp_path: Path) -> None:
    folder = tmp_path / "demo"
    store = _log(folder, runs=1)
    mark_finished(folder, store.max_position())
    store.engine.dispose()
    assert make_room(folder) is None
    assert not folder.exists()
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("marked", [True, False], ids=["recorded-since", "never-finished"])
def test_a_log_with_more_than_a_finished_demo_is_moved_aside(tmp_path: Path, marked: bool) -> None:
    folder = tmp_path / "demo"
    store = _log(folder, runs=1)
    if marked:
        mark_finished(folder, store.max_position())
    store.append(list(simulated_run("mine", utcnow(), attempts=1)))  # a run of the user's own
    head = store.max_position()
    store.engine.dispose()
    kept = make_room(folder)
    assert kept is not None and kept.parent == tmp_path and kept.name.startswith("demo.")
    assert not folder.exists()
    moved = EventStore.from_url(f"sqlite:///{kept / LOG}", create=False)
    assert moved.max_position() == head
    assert moved.read_stream("run-mine")
    moved.engine.dispose()


def test_a_folder_the_demo_never_made_is_moved_not_deleted(tmp_path: Path) -> None:
    folder = tmp_path / "demo"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine")
    (folder / MARK).write_text("not a number")
    kept = make_room(folder)
    assert kept is not None and (kept / "notes.txt").read_text() == "mine"


def test_two_moves_in_the_same_second_do_not_collide(tmp_path: Path) -> None:
    kept = []
    for _ in range(3):
        (tmp_path / "demo").mkdir()
        (tmp_path / "demo" / "x").write_text("x")
        kept.append(make_room(tmp_path / "demo"))
    assert len({str(k) for k in kept}) == 3


def test_a_finished_demo_with_a_file_of_someone_elses_is_moved(tmp_path: Path) -> None:
    """A plot or report written into the demo's folder (`curves --out .labrxiv/demo/x`)
    is not the demo's: the folder is kept whole, however untouched its log."""
    folder = tmp_path / "demo"
    store = _log(folder, runs=1)
    mark_finished(folder, store.max_position())
    store.engine.dispose()
    (folder / "plots").mkdir()
    (folder / "plots" / "best.png").write_bytes(b"png")
    kept = make_room(folder)
    assert kept is not None and (kept / "plots" / "best.png").read_bytes() == b"png"


def test_a_folder_whose_name_needs_escaping_in_a_uri_is_read(tmp_path: Path) -> None:
    """The log is read through a SQLite URI: `#` and `?` in its path are escaped (a `#`
    opened another file, and the demo's folder was moved aside, not deleted)."""
    folder = tmp_path / "a #b?c" / "demo"
    folder.mkdir(parents=True)
    with closing(sqlite3.connect(folder / LOG)) as conn, conn:
        conn.execute("CREATE TABLE events (position INTEGER PRIMARY KEY)")
        conn.executemany("INSERT INTO events VALUES (?)", [(1,), (2,), (3,)])
    mark_finished(folder, 3)
    assert make_room(folder) is None and not folder.exists()


@pytest.mark.slow
def test_a_second_demo_deletes_the_folder_the_first_left(tmp_path: Path) -> None:
    """What a real demo leaves (its log, the leases' and the reactor's files beside it)
    is all the demo's: the next demo deletes the folder instead of moving it aside."""
    env = {k: None for k in os.environ if k.startswith("LABRXIV_")}
    env |= {"LABRXIV_DATA_DIR": str(tmp_path / "data"), "COLUMNS": "200"}
    args = ["demo", "--labs", "2", "--papers", "1", "--attempts", "2", "--deterministic"]
    outputs = []
    for name in ("one", "two"):
        result = CliRunner().invoke(app, [*args, "--report", str(tmp_path / name)], env=env)
        assert result.exit_code == 0, result.output
        outputs.append(result.output)
    assert "moved to" not in outputs[1], outputs[1]
    assert sorted(p.name for p in (tmp_path / "data").iterdir()) == ["demo"]


def _finished_demo(tmp_path: Path) -> Path:
    """A folder as a finished demo leaves it: its log of one run, marked."""
    folder = tmp_path / "demo"
    store = _log(folder, runs=1)
    mark_finished(folder, store.max_position())
    store.engine.dispose()
    return folder


@pytest.mark.parametrize("name", ["labrxiv.db-backup", "labrxiv.db-leases-old", "labrxiv.db-"])
def test_a_file_named_after_the_log_that_no_demo_makes_is_kept(tmp_path: Path, name: str) -> None:
    """Only the files SQLite and the embedded system keep beside the log are the demo's:
    a copy of the log the user made beside it is not deleted."""
    folder = _finished_demo(tmp_path)
    for made in ("labrxiv.db-leases", "labrxiv.db-leases-wal", "labrxiv.db-reactor-reactions"):
        (folder / made).write_bytes(b"")
    (folder / name).write_bytes(b"mine")
    kept = make_room(folder)
    assert kept is not None and (kept / name).read_bytes() == b"mine"


def test_a_folder_named_after_a_file_beside_the_log_is_kept(tmp_path: Path) -> None:
    folder = _finished_demo(tmp_path)
    (folder / "labrxiv.db-wal").mkdir()
    (folder / "labrxiv.db-wal" / "notes.txt").write_text("mine")
    kept = make_room(folder)
    assert kept is not None and (kept / "labrxiv.db-wal" / "notes.txt").read_text() == "mine"


def test_what_the_embedded_system_keeps_beside_the_log_is_the_demos(tmp_path: Path) -> None:
    folder = _finished_demo(tmp_path)
    for made in ("labrxiv.db-wal", "labrxiv.db-leases", "labrxiv.db-leases-writer"):
        (folder / made).write_bytes(b"")
    (folder / "labrxiv.db-reactor-reactions").write_bytes(b"")
    assert make_room(folder) is None and not folder.exists()
