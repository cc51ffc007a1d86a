"""What the command line tells a person instead of a traceback: each error's message is
one line that names the problem and, where there is one, what to do."""


class ShellError(Exception):
    """A problem a person can fix (a missing log, an unknown id, a server away): exit 1."""


class NoLog(ShellError):
    """The data folder or database holds no labrxiv log; read commands never create one."""


class NotFound(ShellError):
    """An id or a filter names nothing in the log or its read models."""


class Unreachable(ShellError):
    """The database or the broker does not answer."""


class CannotWrite(ShellError):
    """A folder labrxiv must write (the data folder, a report) cannot be written."""
