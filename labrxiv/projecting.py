"""`labrxiv projector`: follow the log into the read models, riding out the database's
transient faults as the reactor (`workers.reactor.run_reactor`), the workers and the
campaign watcher do.

The chaos suite found a projector that died at a PostgreSQL outage ("cannot reach the
database", exit 1) and came back only if a later fault happened to restart it. A page
is applied in one transaction with its checkpoint, so a fault mid-page leaves neither:
trying again from the checkpoint is all there is to do.
"""

import logging
import threading

from projections.runner import ProjectionRunner
from workers.retry import DEFAULT, RetryPolicy, is_transient

log = logging.getLogger(__name__)


def follow(
    runner: ProjectionRunner,
    poll_seconds: float,
    stop: threading.Event | None = None,
    policy: RetryPolicy = DEFAULT,
) -> None:
    """Catch up, then again every `poll_seconds` while nothing was new, until stopped.

    A transient fault of the database (`workers.retry.is_transient`) is logged and tried
    again after the retry policy's wait, for as long as it lasts; any other error is a
    bug of a read model and stops the projector (looping on it would hide it)."""
    stop = stop or threading.Event()
    failures = 0
    while not stop.is_set():
        try:
            applied = runner.catch_up()
            failures = 0
        except Exception as exc:
            if not is_transient(exc):
                raise
            wait = policy.wait(failures)
            failures += 1
            log.warning(
                "projector: %s: %s (%d in a row); trying again in %.1fs",
                type(exc).__name__,
                str(exc).strip().splitlines()[0] if str(exc).strip() else "",
                failures,
                wait,
            )
            stop.wait(wait)
            continue
        if applied == 0:
            stop.wait(poll_seconds)
