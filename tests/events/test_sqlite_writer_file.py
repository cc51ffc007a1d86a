"""The file lock beside a SQLite log (`<log>-writer`, `events.engines._Writer`) that
writers of several processes queue at: what it costs a process that opens many logs."""

import os
from pathlib import Path

from sqlalchemy import text

from events.engines import make_engine, writing


def _open_writer_files(folder: Path) -> list[str]:
    """The `-writer` files under `folder` this process holds open."""
    fds = Path("/proc/self/fd")
    held = []
    for fd in os.listdir(fds):
        try:
            target = os.readlink(fds / fd)
        except OSError:
            continue
        if target.startswith(str(folder)) and target.endswith("-writer"):
            held.append(target)
    return held


def test_a_disposed_engine_leaves_no_writer_file_open(tmp_path: Path) -> None:
    """A process that opens and disposes engines on many logs (a test suite, a server
    reading several data dirs) kept one open file a log for its life: with the usual
    limit of 1024 open files, the 1024th log could not be opened."""
    for index in range(3):
        engine = make_engine(f"sqlite:///{tmp_path / f'log{index}.db'}")
        with writing(engine) as conn:
            conn.execute(text("CREATE TABLE t (x INTEGER)"))
        engine.dispose()
    assert _open_writer_files(tmp_path) == []


def test_a_writer_kept_waiting_past_the_busy_timeout_gets_a_transient_fault(
    tmp_path: Path,
) -> None:
    """Another process holding the writers' file lock (stopped with Ctrl-Z mid-write, or
    stuck) held every writer of every other process for ever, with no word; SQLite's own
    lock says "database is locked" after its busy timeout, which the workers retry."""
    import fcntl

    import pytest

    from workers.retry import is_transient

    log = tmp_path / "log.db"
    engine = make_engine(f"sqlite:///{log}", connect_args={"timeout": 0.2})
    with writing(engine) as conn:
        conn.execute(text("CREATE TABLE t (x INTEGER)"))
    other = os.open(f"{os.path.realpath(log)}-writer", os.O_RDWR)  # as another process would
    try:
        fcntl.flock(other, fcntl.LOCK_EX)
        with pytest.raises(Exception) as raised, writing(engine) as conn:
            conn.execute(text("INSERT INTO t VALUES (1)"))
        assert is_transient(raised.value), repr(raised.value)
        assert "-writer" in str(raised.value)
    finally:
        os.close(other)
    with writing(engine) as conn:  # free again: the write goes through
        conn.execute(text("INSERT INTO t VALUES (1)"))
    engine.dispose()
