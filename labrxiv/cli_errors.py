"""Errors a person can fix, told in one line instead of a traceback.

Left alone, an unreachable PostgreSQL prints 450 lines of traceback, a data folder that
cannot be written names no path, and `labrxiv worker` against a Redis that does not
answer retries 100 times naming the transport's class instead of the URL. `ShellGroup` turns
the errors below into one line and exit code 1 for every command; anything else is a
bug and keeps its traceback.
"""

import errno
import json
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.markup import escape
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError

from labrxiv.cli_group import OneLineHelpGroup
from labrxiv.console import make_console
from labrxiv.database_errors import read_only, unreadable
from labrxiv.errors import ShellError
from labrxiv.exit_codes import EXIT_INTERRUPTED

if TYPE_CHECKING:
    from events.store import Damaged

err = make_console(stderr=True, soft_wrap=True)
"""Where errors, notes and log lines go: stdout stays a table or JSON, whole."""

CANNOT_WRITE = {errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOTDIR, errno.EEXIST, errno.ENOSPC}


def say_error(message: str) -> None:
    """One red line on stderr."""
    err.print(f"[red]{escape(message)}[/]")


def explain(exc: BaseException) -> str | None:
    """The one line that tells a person what went wrong, or None for a bug."""
    if isinstance(exc, ShellError):
        return str(exc)
    if isinstance(exc, DBAPIError) and (why := unreadable(exc)) is not None:
        return f"cannot read the database {_database()}: {why}"
    # Operational and interface errors are the database's state (away, missing, locked,
    # read-only); a programming or integrity error is a bug and keeps its traceback.
    if isinstance(exc, OperationalError | InterfaceError):
        reason = str(exc.orig or exc).strip().splitlines()[0]
        if (told := read_only(_database(), reason)) is not None:
            return told
        reached = not (exc.connection_invalidated or _is_connect(exc))
        return f"cannot {'use' if reached else 'reach'} the database {_database()}: {reason}"
    if (  # a data folder that cannot be made where it is asked for (/proc/x): ENOENT
        isinstance(exc, OSError)
        and exc.filename
        and exc.errno == errno.ENOENT
        and _in_data_dir(str(exc.filename))
    ):
        told = f"cannot make {exc.filename}: {exc.strerror}"
        return f"{told}; set LABRXIV_DATA_DIR to a folder you can write"
    if isinstance(exc, OSError) and exc.filename and exc.errno in CANNOT_WRITE:
        told = f"cannot write {exc.filename}: {exc.strerror}"
        if _in_data_dir(str(exc.filename)):
            return f"{told}; set LABRXIV_DATA_DIR to a folder you can write"
        return told  # a path the command was given (--out): the option names it
    if isinstance(exc, json.JSONDecodeError) and (damaged := _damaged()) is not None:
        return str(damaged)
    if _is_broker(exc):
        return f"cannot reach Redis at {_redis()}: {exc}"
    return None


class ShellGroup(OneLineHelpGroup):
    """The command group whose commands fail with one line, not a traceback."""

    # typer hands it a `typer.Context`; the base declares click's (vendored, private).
    def invoke(self, ctx: typer.Context) -> object:  # type: ignore[override]
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:  # before the command's own Ctrl-C handling was set up
            say_error(
                "interrupted (Ctrl-C) before the command could stop cleanly: "
                "`labrxiv runs` lists any run it began, and `labrxiv resume` goes on with it"
            )
            raise typer.Exit(EXIT_INTERRUPTED) from None
        except Exception as exc:
            message = explain(exc)
            if message is None:
                raise
            say_error(message)
            raise typer.Exit(1) from None


def _is_connect(exc: DBAPIError) -> bool:
    """A database error raised while connecting: the server is away or refuses us."""
    if exc.orig is None:
        return False
    text = str(exc.orig)
    return "connection failed" in text or "could not connect" in text.lower()


def _is_broker(exc: BaseException) -> bool:
    try:
        import kombu.exceptions
        import redis
    except ImportError:  # pragma: no cover - both come with celery
        return False
    return isinstance(exc, redis.ConnectionError | kombu.exceptions.OperationalError)


def _in_data_dir(path: str) -> bool:
    """Whether `path` is the data folder or inside it (or the setting cannot be read)."""
    from labrxiv.settings import SettingsError, load_settings

    try:
        data = load_settings().data_dir.resolve()
    except SettingsError:
        return True
    found = Path(path).resolve()
    return found == data or data in found.parents or found in data.parents


def _damaged() -> "Damaged | None":
    """The first damaged event of the log the read commands read (a payload that failed
    to decode names no event), or None when that cannot be told."""
    from labrxiv.reading import find_log, open_log
    from labrxiv.settings import load_settings

    try:
        store = open_log(find_log(load_settings()).settings)
    except Exception:  # noqa: BLE001 - only a better line is at stake; the error stands
        return None
    try:
        return store.first_damaged()
    except Exception:  # noqa: BLE001
        return None
    finally:
        store.engine.dispose()


def _database() -> str:
    """The configured database, as it may be shown (the handler has no settings object)."""
    from labrxiv.settings import SettingsError, load_settings
    from labrxiv.urls import shown_url

    try:
        return shown_url(load_settings().store_url)
    except SettingsError:
        return "(LABRXIV_DATABASE_URL)"


def _redis() -> str:
    from labrxiv.settings import SettingsError, load_settings

    try:
        url = load_settings().redis_url
    except SettingsError:
        url = None
    from labrxiv.urls import hide_password

    return hide_password(url) if url else "(LABRXIV_REDIS_URL)"
