"""Why a database cannot be used, in words: a file that is no log, a log this user cannot
write. A leaf: the read commands' log lookup (`labrxiv.reading`) and the command line's
error handler (`labrxiv.cli_errors`) both say these."""

from sqlalchemy.exc import DatabaseError, DBAPIError


def unreadable(exc: DBAPIError) -> str | None:
    """Why a database file cannot be read as one (not SQLite at all, or damaged), or
    None: the error is of another kind. Not a server out of reach: the file is there."""
    if type(exc) is not DatabaseError or exc.orig is None:
        return None
    reason = str(exc.orig).strip().splitlines()[0]
    if "not a database" in reason or "malformed" in reason:
        return f"{reason} (not a labrxiv log, or a damaged one)"
    return None


def read_only(database: str, reason: str) -> str | None:
    """The line for SQLite's `reason` when it is a log this user cannot write, or None:
    read commands write too (their read models live in the log's database)."""
    if "readonly database" not in reason:
        return None
    return (
        f"cannot use the database {database}: it is read-only here ({reason}), and even a "
        "read command writes its read models into the log's database: copy the folder "
        "somewhere you can write and set LABRXIV_DATA_DIR to the copy"
    )
