"""`labrxiv projector`: follow the log into the read models, riding out the database's
transient faults as the reactor (`workers.reactor.run_reactor`), the workers and the
campaign watcher do.

The chaos suite found a projector that died at a PostgreSQL outage ("cannot reach the
database", exit 1) and came back only if a later fault happened to restart it. A page
is applied in one transaction with its checkpoint, so a fault mid-page leaves neither:
trying again from the checkpoint is all there is to do.
"""

import threading
from collections.abc import Callable, Sequence

from projections.runner import ProjectionRunner
from workers.retry import DEFAULT, RetryPolicy, keep_going


def follow(
    runner: ProjectionRunner,
    poll_seconds: float,
    stop: threading.Event | None = None,
    policy: RetryPolicy = DEFAULT,
    sinks: Sequence[Callable[[], int]] = (),
) -> None:
    """Catch up, then again every `poll_seconds` while nothing was new, until stopped; a
    transient fault of the database is logged and tried again (`workers.retry.keep_going`),
    any other error is a bug of a read model and stops the projector. Each of `sinks`
    (the OpenTelemetry sink's `follow_step`) is called after each catch-up, does a
    bounded share of its work (a page) and returns the events it went past: the read
    models catch up again between a sink's pages, whatever its backlog."""

    def work() -> float:
        done = runner.catch_up()
        done += sum(step() for step in sinks)
        return poll_seconds if done == 0 else 0.0

    keep_going("projector", work, stop or threading.Event(), policy)
