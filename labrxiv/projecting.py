"""`labrxiv projector`: follow the log into the read models, riding out the database's
transient faults as the reactor (`workers.reactor.run_reactor`), the workers and the
campaign watcher do.

The chaos suite found a projector that died at a PostgreSQL outage ("cannot reach the
database", exit 1) and came back only if a later fault happened to restart it. A page
is applied in one transaction with its checkpoint, so a fault mid-page leaves neither:
trying again from the checkpoint is all there is to do.
"""

import threading

from projections.runner import ProjectionRunner
from workers.retry import DEFAULT, RetryPolicy, keep_going


def follow(
    runner: ProjectionRunner,
    poll_seconds: float,
    stop: threading.Event | None = None,
    policy: RetryPolicy = DEFAULT,
) -> None:
    """Catch up, then again every `poll_seconds` while nothing was new, until stopped; a
    transient fault of the database is logged and tried again (`workers.retry.keep_going`),
    any other error is a bug of a read model and stops the projector."""
    keep_going(
        "projector",
        lambda: poll_seconds if runner.catch_up() == 0 else 0.0,
        stop or threading.Event(),
        policy,
    )
