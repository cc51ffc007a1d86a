"""Database engines for the two backends: a SQLite file (embedded) and PostgreSQL."""

import fcntl
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

import orjson
from sqlalchemy import Connection, Engine, create_engine, event, exc
from sqlalchemy.engine import make_url

log = logging.getLogger(__name__)


def _json_dumps(value: Any) -> str:
    return orjson.dumps(value).decode()


def make_engine(url: str, **kwargs: Any) -> Engine:
    """An engine for `url` (`sqlite:///path` or `postgresql+psycopg://…`), tuned for the log."""
    parsed = make_url(url)
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        return _sqlite_engine(url, **kwargs)
    if backend == "postgresql":
        if parsed.drivername == "postgresql":
            url = parsed.set(drivername="postgresql+psycopg").render_as_string(hide_password=False)
        # UTF-8 on the wire whatever the database's encoding: in a SQL_ASCII database (what
        # initdb makes where no UTF-8 locale is installed) psycopg returned text as bytes
        # and SQLAlchemy's first query failed ("cannot use a string pattern on a
        # bytes-like object"). SQL_ASCII stores the bytes it is given: UTF-8 round-trips.
        # Sessions in UTC whatever the server's or the database's zone: every time in the
        # log is UTC (`events.ids.utcnow`) and comes back so, as from SQLite; in another
        # zone psycopg also converted each time into it (a `ZoneInfo`), ~0.5 µs of the
        # ~4 µs an event of a rebuild's read (bench/rebuild.py). Options given elsewhere
        # are kept after it: libpq's PGOPTIONS (which an explicit `options` would
        # override), then the URL's (`?options=…`).
        given = parsed.query.get("options")
        given = " ".join(given) if isinstance(given, tuple) else given
        options = " ".join(filter(None, ["-c TimeZone=UTC", os.environ.get("PGOPTIONS"), given]))
        connect_args = {"client_encoding": "utf8", "options": options} | kwargs.pop(
            "connect_args", {}
        )
        return create_engine(
            url,
            json_serializer=_json_dumps,
            json_deserializer=orjson.loads,
            connect_args=connect_args,
            **({"pool_pre_ping": True} | kwargs),
        )
    raise ValueError(
        f"unsupported database URL scheme {parsed.drivername!r}: use sqlite or postgresql"
    )


BUSY_TIMEOUT_S = 60.0
"""SQLite's busy timeout by default: how long a writer, or a `turn`, waits for another's."""


def _on_disk(database: str | None) -> bool:
    """Whether a SQLite URL's database is a file (an in-memory one has a pool of its own,
    which takes no pool sizes)."""
    return bool(database) and database != ":memory:"


def _sqlite_engine(url: str, **kwargs: Any) -> Engine:
    database = make_url(url).database
    if _on_disk(database):
        Path(str(database)).parent.mkdir(parents=True, exist_ok=True)
    else:  # sizes of a file's pool (`open_embedded` gives them) mean nothing here
        kwargs.pop("pool_size", None)
    # No cap on connections: a SQLite connection is a file handle, with no server to
    # protect, and a capped pool only added a way to fail. At 20 embedded llm labs the
    # default cap (5 + 10) ran out while every holder waited for the writer lock, whose
    # holder waited for a connection (a reactor reads the log inside its transaction):
    # "QueuePool limit … reached" after 30 s, and the campaign stalled. `pool_size` is
    # how many stay open between uses (the embedded system sizes it to its threads).
    # `timeout`: SQLite's busy timeout, in seconds (what another process's writer may
    # keep this one waiting, at SQLite's lock or at the writers' file lock: `_Writer`).
    connect_args = {"timeout": BUSY_TIMEOUT_S, "check_same_thread": False} | kwargs.pop(
        "connect_args", {}
    )
    engine = create_engine(
        url,
        json_serializer=_json_dumps,
        json_deserializer=orjson.loads,
        connect_args=connect_args,
        **(({"max_overflow": -1} if _on_disk(database) else {}) | kwargs),
    )
    writer = _writer_lock(database)
    busy_timeout = float(connect_args["timeout"])

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        # Let SQLAlchemy's "begin" hook emit BEGIN itself, so appends can ask for
        # BEGIN IMMEDIATE: a deferred transaction that later writes can fail with
        # SQLITE_BUSY at once instead of waiting (the single-writer rule).
        dbapi_conn.isolation_level = None
        cursor = dbapi_conn.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        mode = conn.get_execution_options().get("sqlite_begin", "DEFERRED")
        if mode == "DEFERRED":
            # Straight to the driver: every read begins one, and SQLAlchemy's statement
            # machinery around a BEGIN cost ~25 µs of a ~100 µs read (a stream's new
            # events). A deferred BEGIN takes no lock and touches no file: it has no
            # fault to translate.
            conn.connection.dbapi_connection.execute("BEGIN DEFERRED")  # type: ignore[union-attr]
            return
        # SQLite has one writer: this process's writers queue for it here, in order and
        # asleep, holding no connection's lock. Left to SQLite, each polled the file lock
        # in its busy handler (sleeps of up to 100 ms, no order): with tens of threads
        # some waited out the 60 s busy timeout ("database is locked"). Writers of other
        # processes on the same file queue with this one on a file lock (`_Writer`).
        writer.acquire(busy_timeout)
        conn.info[_HOLDS_WRITER] = True
        try:
            conn.exec_driver_sql(f"BEGIN {mode}")
        except BaseException:
            _release(conn)
            raise

    @event.listens_for(engine, "commit")
    def _on_commit(conn: Connection) -> None:
        # SQLAlchemy calls this before it commits: commit here, then let the next writer
        # in, so it does not begin while the lock is still SQLite's and sleep in its busy
        # handler (SQLAlchemy's own commit then finds no transaction and does nothing).
        _end(conn, "commit")

    @event.listens_for(engine, "rollback")
    def _on_rollback(conn: Connection) -> None:
        _end(conn, "rollback")

    def _end(conn: Connection, how: Literal["commit", "rollback"]) -> None:
        """Commit or roll back (`how`) a transaction holding the writer lock, then let
        the next writer in."""
        if conn.info.get(_HOLDS_WRITER):
            try:
                getattr(conn.connection.dbapi_connection, how)()
            finally:
                _release(conn)

    def _release(conn: Connection) -> None:
        if conn.info.pop(_HOLDS_WRITER, False):
            writer.release()

    return engine


_HOLDS_WRITER = "labrxiv_holds_writer"
"""Set in a connection's `info` while its transaction holds the process's writer lock."""


class _Writer:
    """The turn to write one SQLite file: this process's writers queue on a reentrant
    thread lock, and the one holding it takes an exclusive `flock` of a file beside the
    database (`<database>-writer`), where the writers of other processes meet it: their
    turns alternate at a lock each takes in a few hundred microseconds of its release,
    not at SQLite's, whose busy handler sleeps up to 100 ms. The file is open only while
    the lock is held (nothing is left open by a process that wrote many logs, nor shared
    with a forked child). Another process keeping it past `timeout` seconds (SQLite's busy
    timeout) is "database is locked", a transient fault, as SQLite would say. Where the
    file cannot be made or locked (a read-only folder, a file system without `flock`), the
    processes meet at SQLite's lock alone."""

    def __init__(self, path: str | None, suffix: str = "writer") -> None:
        self._lock = threading.RLock()
        self._path = path
        self._suffix = suffix
        self._depth = 0
        self._fd: int | None = None

    def acquire(self, timeout: float) -> None:
        self._lock.acquire()
        self._depth += 1
        if self._depth == 1 and self._path is not None:
            try:
                self._fd = self._take(self._path, timeout)
            except BaseException:
                self.release()
                raise

    def release(self) -> None:
        if self._depth == 1 and self._fd is not None:
            os.close(self._fd)  # closing it unlocks it
            self._fd = None
        self._depth -= 1
        self._lock.release()

    def _take(self, path: str, timeout: float) -> int | None:
        try:
            fd = os.open(f"{path}-{self._suffix}", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
        except OSError:
            self._path = None  # not ours to make: SQLite's lock alone
            return None
        deadline = time.monotonic() + timeout
        wait = _FIRST_WAIT
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    return fd
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        said = f"database is locked: another process held {path}-{self._suffix}"
                        raise exc.OperationalError(
                            "BEGIN IMMEDIATE", None, sqlite3.OperationalError(said)
                        ) from None
                    time.sleep(wait)
                    wait = min(2 * wait, _LONGEST_WAIT)
                except OSError:
                    self._path = None  # no flock here: SQLite's lock alone
                    os.close(fd)
                    return None
        except BaseException:
            if self._fd != fd:
                os.close(fd)
            raise


_FIRST_WAIT = 0.00005
_LONGEST_WAIT = 0.0005
"""How often a writer looks again at the file lock another process holds: a few hundred
microseconds, a transaction's order of time."""

_LOCKS: dict[tuple[str, str], _Writer] = {}
_LOCKS_LOCK = threading.Lock()


def _lock_of(key: str, path: str | None, suffix: str) -> _Writer:
    """This process's one `_Writer` for `key` (a SQLite file's real path) and `suffix`
    (what is taken turns at), whichever engine asks: a file lock `<path>-<suffix>`, or
    with no `path` (an in-memory database, its engine's own) the thread lock alone."""
    with _LOCKS_LOCK:
        return _LOCKS.setdefault((key, suffix), _Writer(path, suffix))


def _writer_lock(database: str | None) -> _Writer:
    """The turn this process's writers of one SQLite file take (`_Writer`): one per file,
    whichever engine they write through (an in-memory database is its engine's own).
    Reentrant: a thread that nests a second writer on the same file waits for itself at
    SQLite's lock, which times out with an error, rather than hang here for ever."""
    if not _on_disk(database):
        return _Writer(None)
    path = os.path.realpath(str(database))
    return _lock_of(path, path, "writer")


def sqlite_file(engine: Engine) -> str | None:
    """The real path of `engine`'s SQLite file; None for PostgreSQL or an in-memory
    SQLite database."""
    database = engine.url.database
    if engine.dialect.name != "sqlite" or not _on_disk(database):
        return None
    return os.path.realpath(str(database))


@contextmanager
def turn(engine: Engine, name: str) -> Iterator[None]:
    """A turn at `name`'s work on a SQLite file, taken by one thread of one process at a
    time (a reentrant lock in this process, an exclusive `flock` of `<database>-<name>`
    across processes, as the writers' `_Writer`) and held without the writer lock: work
    that reads the log and sends between two short writes (the reactor's page) keeps no
    writer waiting meanwhile. On PostgreSQL it holds nothing: the work's transaction
    locks a row for it (FOR UPDATE) and blocks no other writer."""
    if engine.dialect.name != "sqlite":
        yield
        return
    path = sqlite_file(engine)
    held = _lock_of(path or f"memory:{id(engine)}", path, name)
    held.acquire(BUSY_TIMEOUT_S)
    try:
        yield
    finally:
        held.release()


def lock_for_append(conn: Connection) -> Connection:
    """Serialize appenders so positions are committed in order (see DESIGN: the log).

    PostgreSQL: an EXCLUSIVE table lock (readers still read), as the eventsourcing
    library does, so a tailer never passes a position that a slower transaction
    fills later. SQLite: the connection must be opened with `writer_options`.
    """
    if conn.dialect.name == "postgresql":
        conn.exec_driver_sql("LOCK TABLE events IN EXCLUSIVE MODE")
    return conn


WRITER_OPTIONS = {"sqlite_begin": "IMMEDIATE"}
"""Execution options for a connection that will write the log."""


@contextmanager
def writing(engine: Engine) -> Iterator[Connection]:
    """A transaction that will write, on a connection of its own (SQLite: begun IMMEDIATE,
    so it waits for the writer lock at its start instead of failing at its first write
    with "database is locked" when another writer committed in between)."""
    with engine.connect().execution_options(**WRITER_OPTIONS) as conn, conn.begin():
        yield conn
