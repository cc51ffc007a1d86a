"""Many threads of one process on one SQLite log (the embedded system: a bus thread per
lab): connections are never rationed, and writers take turns at a lock of the process
instead of failing at SQLite's ("database is locked")."""

import threading
from pathlib import Path

import pytest
from sqlalchemy import text

from events import EventStore
from events.engines import make_engine, writing

THREADS = 40


def test_every_thread_gets_a_connection_at_once(tmp_path: Path) -> None:
    """A capped pool (SQLAlchemy's 5 + 10) ran out under 20 labs while each holder waited
    for the writer, whose holder waited for a connection."""
    engine = make_engine(f"sqlite:///{tmp_path / 'log.db'}", pool_timeout=0.5)
    held = [engine.connect() for _ in range(THREADS)]
    for conn in held:
        assert conn.execute(text("SELECT 1")).scalar() == 1
        conn.close()
    engine.dispose()


def test_writers_of_one_file_take_turns_and_none_fails(tmp_path: Path) -> None:
    """Forty threads, two engines on the same file (as the watcher and the workers have),
    each writing inside a transaction that reads on a second connection (as the reactor
    reads the log): every write lands; SQLite's busy timeout is a second, which threads
    polling SQLite's lock (sleeps of up to 100 ms, no order) outlasted."""
    url = f"sqlite:///{tmp_path / 'log.db'}"
    engines = [make_engine(url, connect_args={"timeout": 1}) for _ in range(2)]
    with writing(engines[0]) as conn:
        conn.execute(text("CREATE TABLE counts (thread INTEGER, n INTEGER)"))
    rounds = 25
    errors: list[BaseException] = []
    start = threading.Barrier(THREADS)

    def write(number: int) -> None:
        engine = engines[number % 2]
        try:
            start.wait()
            for n in range(rounds):
                with writing(engine) as conn:
                    with engine.connect() as reader:
                        reader.execute(text("SELECT count(*) FROM counts")).scalar()
                    conn.execute(text("INSERT INTO counts VALUES (:t, :n)"), {"t": number, "n": n})
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(i,)) for i in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    with engines[0].connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM counts")).scalar() == THREADS * rounds
    for engine in engines:
        engine.dispose()


@pytest.mark.parametrize("url", ["sqlite://", "sqlite:///:memory:"])
def test_an_in_memory_log_opens(url: str) -> None:
    """An in-memory database has a pool of its own, which takes no pool sizes: given
    them, it failed with a TypeError traceback."""
    store = EventStore.from_url(url, pool_size=8)
    assert store.engine.dialect.name == "sqlite"


def test_a_read_sees_one_snapshot_until_it_ends(tmp_path: Path) -> None:
    """Every read begins a transaction (`BEGIN DEFERRED`): its statements see the log as
    it was at its first, whatever a writer commits meanwhile."""
    engine = make_engine(f"sqlite:///{tmp_path / 'log.db'}")
    with writing(engine) as conn:
        conn.execute(text("CREATE TABLE items (n INTEGER)"))
    count = text("SELECT count(*) FROM items")
    with engine.connect() as reader:
        assert reader.in_transaction() is False
        assert reader.execute(count).scalar() == 0
        assert reader.in_transaction()
        with writing(engine) as conn:
            conn.execute(text("INSERT INTO items VALUES (1)"))
        assert reader.execute(count).scalar() == 0
    with engine.connect() as reader:
        assert reader.execute(count).scalar() == 1
    engine.dispose()
