"""Where the shell prints: consoles that fit the terminal or print whole when piped, and
log lines on stderr that keep to labrxiv's own and never tear a live table: no INFO
line per model call (httpx's, the gateway's) over the live table of an `llm` campaign,
and no piped table cut at 80 columns.
"""

import logging
import sys
from typing import Any

from rich.console import Console, ConsoleDimensions
from rich.errors import NotRenderableError
from rich.measure import Measurement

OWN_PACKAGES = ("labrxiv", "events", "projections", "runstate", "workers", "analysis")
"""The loggers LABRXIV_LOG_LEVEL sets; every other library's logs warnings only."""
CHATTY = ("httpx2", "httpcore2", "openai")
"""Libraries with a line per request: held at WARNING explicitly, since a Celery worker
sets the root logger to its `-l` level (its own task lines are worth keeping there)."""
PIPED_MAX_WIDTH = 10_000
"""Widest line a piped print may have; a renderable as wide as this has no natural width."""
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class ShellConsole(Console):
    """A rich console that, when its file is not a terminal (a pipe, a file, a test's
    capture), prints each renderable at its natural width: a table whole, whatever the
    terminal's width, never cut to 80 columns with "…" cells. What has no natural width
    (a rule, Markdown prose) gets the width the console would have had. In a terminal it
    is rich's console unchanged: tables fit the terminal (their cells fold)."""

    @property
    def size(self) -> ConsoleDimensions:
        size = super().size
        if self.is_terminal:
            return size
        return ConsoleDimensions(PIPED_MAX_WIDTH, size.height)

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:
        Console.size.fset(self, new_size)  # type: ignore[attr-defined]

    def print(self, *objects: Any, width: int | None = None, **kwargs: Any) -> None:
        if width is None and objects and not self.is_terminal:
            width = self._natural_width(objects, kwargs.get("markup"))
        super().print(*objects, width=width, **kwargs)

    def _natural_width(self, objects: tuple[Any, ...], markup: bool | None) -> int:
        fallback = Console.size.fget(self).width  # type: ignore[attr-defined]
        options = self.options.update(max_width=PIPED_MAX_WIDTH, markup=markup)
        total = len(objects) - 1  # the separators
        for item in objects:
            try:
                measured = Measurement.get(self, options, item).maximum
            except NotRenderableError:
                measured = len(str(item))
            total += measured if measured < PIPED_MAX_WIDTH else fallback
        return max(1, min(total, PIPED_MAX_WIDTH))


def make_console(stderr: bool = False, **options: Any) -> Console:
    """The console every command prints with (stdout, or stderr for errors and logs)."""
    return ShellConsole(stderr=stderr, **options)


console = make_console()
"""The console every command prints its output with (on stdout, looked up at each print)."""


class StderrHandler(logging.Handler):
    """Log records as lines on `sys.stderr`, looked up at each line: while a live table is
    shown in a terminal, rich's `Live` stands in for `sys.stderr` and prints the line
    above the table, drawn again below it. (`logging.StreamHandler` keeps the stream it
    was made with and would write through the table; so would a rich console, which
    writes to the stream behind rich's stand-in.)"""

    def __init__(self) -> None:
        super().__init__()
        self.setFormatter(logging.Formatter(LOG_FORMAT))

    def emit(self, record: logging.LogRecord) -> None:
        try:
            stream = sys.stderr
            stream.write(self.format(record) + "\n")
            stream.flush()
        except Exception:
            self.handleError(record)


def configure_logging(level: str) -> None:
    """Log to stderr at `level` for labrxiv's own loggers; other libraries' lines (httpx2's
    line per request, Celery's and kombu's chatter) at WARNING and above, unless `level`
    is DEBUG, which shows everything. Safe to call again (each command of a test session
    does): the previous handler is replaced."""
    numeric = logging.getLevelName(level)
    libraries = numeric if numeric == logging.DEBUG else max(numeric, logging.WARNING)
    root = logging.getLogger()
    for handler in [h for h in root.handlers if isinstance(h, StderrHandler)]:
        root.removeHandler(handler)
    root.addHandler(StderrHandler())
    root.setLevel(libraries)
    for name in OWN_PACKAGES:
        logging.getLogger(name).setLevel(numeric)
    for name in CHATTY:
        logging.getLogger(name).setLevel(libraries)


def hand_logging_to_celery() -> None:
    """Undo `configure_logging` before a Celery worker starts: the worker sets up its own
    logging at its `-l` level, and its task lines ("Task … succeeded in …") are what its
    log is for; only the per-request libraries stay at WARNING (`CHATTY`)."""
    root = logging.getLogger()
    for handler in [h for h in root.handlers if isinstance(h, StderrHandler)]:
        root.removeHandler(handler)
    root.setLevel(logging.NOTSET)
