"""What the command line tells a person instead of a traceback: each error's message is
one line that names the problem and, where there is one, what to do."""

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


class ShellError(Exception):
    """A problem a person can fix (a missing log, an unknown id, a server away): exit 1."""


class NoLog(ShellError):
    """The data folder or database holds no labrxiv log; read commands never create one."""


class NotFound(ShellError):
    """An id or a filter names nothing in the log or its read models."""


class Ambiguous(NotFound):
    """An id prefix names more than one (the web API's 400: a malformed query, not an
    unknown id)."""


class Unreachable(ShellError):
    """The database or the broker does not answer."""


class CannotServe(ShellError):
    """`labrxiv serve` cannot listen where it is asked (the port taken, a privileged one,
    an address this machine does not have)."""


class CannotWrite(ShellError):
    """A folder labrxiv must write (the data folder, a report) cannot be written."""


@contextmanager
def written(path: Path) -> Iterator[Path]:
    """Make `path`'s folder, then let the caller write `path`: a file a command writes
    where the person asked, in a folder made for it if missing; an `OSError` on the way
    (a folder that cannot be made, a full disk) is a `CannotWrite` naming the file."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        yield path
    except (FileExistsError, NotADirectoryError) as exc:
        raise CannotWrite(f"cannot write {path}: {exc.filename} is not a folder") from None
    except OSError as exc:
        raise CannotWrite(f"cannot write {path}: {exc.strerror or exc}") from None
