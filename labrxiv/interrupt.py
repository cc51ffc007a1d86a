"""Ctrl-C in embedded mode: stop the work, say which runs were left, keep the read models
current, and resume them later (`labrxiv resume`).

The bus drops what is queued and lets the steps being taken end, each campaign with runs
left unfinished gets a `campaign.interrupted` naming them (`workers.lab.interrupt`), and
the read models are caught up before the process exits. Nothing is lost by stopping
there: a step's events that were not recorded are taken again from the log when the run
is resumed.
"""

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import FrameType

from rich.console import Console

from labrxiv.wiring import Embedded
from runstate.words import counted
from workers.lab.interrupt import record_interrupted, unfinished_by_campaign

_PRESSED = threading.Event()
"""Set by a Ctrl-C inside `ctrl_c_between_ticks`, until it is raised."""


@contextmanager
def ctrl_c_between_ticks() -> Iterator[None]:
    """Inside: a first Ctrl-C is raised as `KeyboardInterrupt` only where the watcher looks
    for it (`check_ctrl_c`, between its ticks) or when the block ends, never in the middle
    of a database transaction or inside a lock a library holds; a second Ctrl-C is raised
    at once. (Raised anywhere, it once left an embedded campaign hung for minutes under
    load: the worker threads the stop waits for can wait on what the main thread held.)
    Main thread only, as signal handlers are."""

    def pressed(signum: int, frame: FrameType | None) -> None:
        if _PRESSED.is_set():
            signal.default_int_handler(signum, frame)  # the second: quit now
        _PRESSED.set()

    if threading.current_thread() is not threading.main_thread():
        yield  # no handler can be set here: Ctrl-C is the main thread's
        return
    _PRESSED.clear()
    previous = signal.signal(signal.SIGINT, pressed)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    check_ctrl_c()


def press_ctrl_c() -> None:
    """Stop as a first Ctrl-C does, at the watcher's next check (from any thread)."""
    _PRESSED.set()


def check_ctrl_c() -> None:
    """Raise the Ctrl-C noted by `ctrl_c_between_ticks`, if there was one."""
    if _PRESSED.is_set():
        _PRESSED.clear()
        raise KeyboardInterrupt


def pause(seconds: float) -> None:
    """Sleep `seconds`, or less when Ctrl-C is pressed; then raise it if it was."""
    _PRESSED.wait(seconds)
    check_ctrl_c()


@dataclass(frozen=True)
class Left:
    """A campaign's runs that a stop left unfinished."""

    campaign: str
    runs: list[str]


class Stopped(Exception):
    """The work was stopped by Ctrl-C; `left` says what it left unfinished."""

    def __init__(self, left: list[Left]) -> None:
        super().__init__(f"stopped with {sum(len(item.runs) for item in left)} runs unfinished")
        self.left = left


def stop_embedded(system: Embedded, detail: str, campaign: str | None = None) -> list[Left]:
    """Stop the embedded system's work and record what it left, per campaign (only
    `campaign`'s, if given: the one a timed-out watch was on): in embedded mode this
    process is the only worker, so no unfinished run of its log goes on."""
    try:
        system.bus.abandon()
    except KeyboardInterrupt:  # Ctrl-C again: quit now, what is left recorded first
        system.bus.quit()
    left = []
    unfinished = unfinished_by_campaign(system.store, campaign)
    for stopped, runs in sorted(unfinished.items()):
        record_interrupted(system.store, stopped, runs, detail)
        left.append(Left(stopped, runs))
    if system.ctx.leases is not None:  # the runs' only worker stopped: `resume` takes them
        system.ctx.leases.forget(run for item in left for run in item.runs)
    system.runner.catch_up()
    return left


def settle_or_stop(
    system: Embedded, finished: bool, detail: str, campaign: str
) -> list[Left] | None:
    """After watching in embedded mode: let the work settle when the watched runs
    finished; when the watch timed out, stop the work as Ctrl-C does and return what was
    left. This process is the only worker: settling waited for every run to end, however
    long after `--timeout` (found running labrxiv from outside: 12 s for a 2 s timeout)."""
    if finished:
        system.settle()
        return None
    return stop_embedded(system, detail, campaign)


def say_stopped(console: Console, left: list[Left], unseen: int = 0) -> None:
    """What was left, and the command that goes on with it. `unseen`: watched runs the
    runs read model never showed (a run whose run.started was dead-lettered): none of
    them is left unfinished in the log, and none of them had finished either."""
    if not left and unseen:
        console.print(
            f"stopped: {counted(unseen, 'watched run')} never seen to begin"
            " (`labrxiv events dead` lists what was not recorded)",
            soft_wrap=True,
        )
    elif not left:
        console.print("stopped: every run had finished")
    for item in left:
        console.print(
            f"stopped: {len(item.runs)} runs of campaign {item.campaign} had not finished; "
            f"`labrxiv resume --campaign {item.campaign}` goes on with them",
            soft_wrap=True,
        )
