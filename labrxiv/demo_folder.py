"""The demo's folder (`<data dir>/demo`): made fresh by each demo, never at the cost of
what someone else put there.

`make demo` ends by suggesting `export LABRXIV_DATA_DIR=.labrxiv/demo`, and from there a
`campaign`, `fork` or `resume` adds to the demo's log, which the next demo must not
delete without a word. A demo that ends writes `MARK` with the head of its log; the next
demo deletes the folder only when the log's head is still that one, and otherwise (more
recorded since, a demo stopped before its end, a folder the demo never made) moves it
aside and says where.
"""

import shutil
import sqlite3
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path

from labrxiv.errors import CannotWrite

MARK = ".demo-head"
"""The file a finished demo leaves in its folder: its log's head position."""
LOG = "labrxiv.db"
"""The demo's log in its folder (embedded defaults: SQLite)."""


def mark_finished(folder: Path, head: int) -> None:
    """Say that `folder` holds a demo's log whose head was `head` when it ended."""
    (folder / MARK).write_text(f"{head}\n")


MADE = frozenset({LOG, MARK, "workspaces", "inflight"})
"""What a demo leaves in its folder (`labrxiv.wiring`'s embedded system), besides the
files beside its log (`_beside_log`): a folder with anything else in it (a plot or
report written there) is not deleted."""


def _beside_log(entry: Path) -> bool:
    """A file SQLite or the embedded system keeps beside the log, named after it: SQLite's
    of the log and of the leases' database (`labrxiv.db-leases`), the writers' lock files
    and the reactors' (`labrxiv.db-reactor-reactions`, `events.engines.turn`)."""
    suffix = entry.name.removeprefix(f"{LOG}-")
    if suffix == entry.name or not entry.is_file() or entry.is_symlink():
        return False
    return suffix in _BESIDE or suffix.startswith("reactor-")


_SQLITE = ("wal", "shm", "journal", "writer")
"""What SQLite (and the writers' lock, `events.engines._Writer`) keeps beside a database."""
_BESIDE = frozenset({*_SQLITE, "leases", *(f"leases-{end}" for end in _SQLITE)})
"""The names, after `labrxiv.db-`, of the files beside the log (but the reactors')."""


def make_room(folder: Path) -> Path | None:
    """Clear `folder` for a new demo: delete it if it holds only a finished demo's log,
    else move it to a new `demo.<time>` beside it and return where it went;
    `CannotWrite` if neither can be done."""
    if not folder.exists():
        return None
    try:
        if _untouched_demo(folder):
            shutil.rmtree(folder)
            return None
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
        kept = folder.with_name(f"{folder.name}.{stamp}")
        number = 1
        while kept.exists():
            number += 1
            kept = folder.with_name(f"{folder.name}.{stamp}-{number}")
        folder.rename(kept)
    except OSError as exc:  # a folder of someone else's, a mount point…
        raise CannotWrite(f"cannot clear {folder} for the demo: {exc.strerror}") from None
    return kept


def _untouched_demo(folder: Path) -> bool:
    """Whether `folder` holds only what a demo makes, its log ending where that demo
    ended."""
    if not folder.is_dir() or folder.is_symlink():
        return False
    if any(e.name not in MADE and not _beside_log(e) for e in folder.iterdir()):
        return False
    try:
        marked = int((folder / MARK).read_text().strip())
    except (OSError, ValueError):
        return False
    return _head(folder / LOG) == marked


def _head(log: Path) -> int | None:
    """The highest position in the SQLite log at `log`; None if it cannot be read."""
    if not log.is_file():
        return None
    try:
        with closing(sqlite3.connect(f"{log.resolve().as_uri()}?mode=ro", uri=True)) as conn:
            return int(conn.execute("SELECT coalesce(max(position), 0) FROM events").fetchone()[0])
    except sqlite3.Error:
        return None
