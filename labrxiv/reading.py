"""Where the read commands find the log: one that exists, never a new one.

Opening the store as the writers do creates the data folder and an empty `labrxiv.db`
when they are missing: after `make demo` (whose log is in `.labrxiv/demo`) a plain
`labrxiv runs` would make `.labrxiv/labrxiv.db` and print empty tables. So a missing log
is an error naming the path, and a data folder that holds no log falls back to the
demo's data beside it, saying so.
"""

import sqlite3
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import inspect
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError

from events import EventStore
from labrxiv.database_errors import read_only, unreadable
from labrxiv.errors import NoLog, Unreachable
from labrxiv.settings import Settings
from labrxiv.urls import shown_url

DEMO_FOLDER = "demo"
"""`labrxiv demo` runs in `<data dir>/demo` (labrxiv.demo)."""


def to_do() -> str:
    """How to get a log: make one, or read one that exists."""
    return "run `make demo` or `labrxiv campaign` first, or set LABRXIV_DATA_DIR to a log's folder"


@dataclass(frozen=True)
class Found:
    """A log to read: the settings that name it, and what to tell the reader about it."""

    settings: Settings
    note: str | None = None
    """Said when the log is not the one the settings name (the demo's, as a fallback)."""


def sqlite_path(settings: Settings) -> Path | None:
    """The SQLite file the log is in; None for a database server."""
    url = make_url(settings.store_url)
    if url.get_backend_name() != "sqlite" or url.database in (None, "", ":memory:"):
        return None
    return Path(url.database)


def find_log(settings: Settings) -> Found:
    """The log the settings name if it holds events, else the demo's beside it (when no
    database URL is set), else the named one if it exists (empty); `NoLog` when none does."""
    path = sqlite_path(settings)
    named = path is None or path.is_file()
    if settings.database_url is None and not (named and _has_events(settings)):
        demo = settings.data_dir / DEMO_FOLDER
        demo_settings = settings.model_copy(update={"data_dir": demo})
        if (demo / "labrxiv.db").is_file() and _has_events(demo_settings):
            note = f"reading the demo's data in {demo} (set LABRXIV_DATA_DIR to read another)"
            return Found(demo_settings, note)
    if not named:
        assert path is not None
        if settings.database_url is None:
            raise NoLog(f"no log in {settings.data_dir} ({path} does not exist): {to_do()}")
        raise NoLog(f"no log at {path}: check LABRXIV_DATABASE_URL, or {to_do()}")
    return Found(settings)


def open_log(settings: Settings) -> EventStore:
    """The store on an existing log, its tables untouched; `NoLog` for a database with no
    log in it (an SQLite file is looked into read-only first: opening it for the store
    would set its journal mode), `Unreachable` for a server that does not answer."""
    path = sqlite_path(settings)
    if path is not None and path.is_file() and _holds_no_log(path):
        raise NoLog(f"no log in {shown_url(settings.store_url)} (no events table): {to_do()}")
    store = EventStore.from_url(settings.store_url, create=False)
    try:
        has_log = inspect(store.engine).has_table("events")
    except DBAPIError as exc:
        store.engine.dispose()
        raise database_unreachable(settings.store_url, exc) from None
    if not has_log:
        store.engine.dispose()
        raise NoLog(f"no log in {shown_url(settings.store_url)} (no events table): {to_do()}")
    return store


def _holds_no_log(path: Path) -> bool:
    """Whether the SQLite file at `path` is a database without an events table, found
    without writing: an empty file is one; a database in rollback-journal mode is looked
    into read-only. False for a database in WAL mode (as every log is: opening it changes
    nothing, and a read-only look would leave `-wal` and `-shm` files of this user's
    beside it) and for what is no database (the store's own open says why)."""
    try:
        with path.open("rb") as file:
            header = file.read(100)
    except OSError:
        return False
    if not header:
        return True
    if not header.startswith(b"SQLite format 3\x00") or header[18] == WAL_FORMAT:
        return False
    try:
        with closing(sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)) as db:
            found = db.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'events'"
            ).fetchone()
    except sqlite3.Error:
        return False
    return found is None


WAL_FORMAT = 2
"""The file format version (header byte 18) of an SQLite database in WAL mode."""


def database_unreachable(url: str, exc: DBAPIError) -> Unreachable:
    """The one line for a database at `url` that failed with `exc` on first use: a file
    that is no log, or a server that does not answer (password hidden)."""
    shown = shown_url(url)
    if (why := unreadable(exc)) is not None:
        return Unreachable(f"cannot read the database {shown}: {why}")
    reason = str(exc.orig).strip().splitlines()[0] if exc.orig else type(exc).__name__
    return Unreachable(read_only(shown, reason) or f"cannot reach the database {shown}: {reason}")


def _has_events(settings: Settings) -> bool:
    """Whether an existing SQLite log holds any event (one a read command of an older
    labrxiv created holds none)."""
    try:
        store = open_log(settings)
    except NoLog:
        return False
    try:
        return store.max_position() > 0
    finally:
        store.engine.dispose()
