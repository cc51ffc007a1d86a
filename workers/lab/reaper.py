"""The reaper: finds runs whose next step was lost and sends it again.

A step message can be lost outside the log's control (Redis restarted empty; kombu's
window between BRPOP and the unacked record; a worker killed mid-step). The log still
says which runs are not finished and when they last moved; sending their next step
again is safe, because a step is addressed by the version it follows. A run whose step
is being taken holds a lease (`workers.lab.lease`) and is left alone, however long
the step takes.
"""

import logging
from collections.abc import Iterable
from datetime import datetime, timedelta

from events import EventStore
from events.ids import utcnow
from workers.bus.base import Bus
from workers.lab.lease import Leases
from workers.lab.step import LAB_STEP_TASK
from workers.metrics import count_reaped

log = logging.getLogger(__name__)


def stalled_runs(
    store: EventStore,
    streams: Iterable[str],
    quiet_for: timedelta,
    now: datetime | None = None,
    leases: Leases | None = None,
) -> list[tuple[str, int]]:
    """(stream, last version) of each unfinished run with no event for `quiet_for` and
    no step being taken (no live lease on its next step)."""
    now = now or utcnow()
    names = list(streams)
    heads = store.stream_heads(names)
    stalled = [
        (stream, head.version)
        for stream in names
        if (head := heads.get(stream)) is not None
        and head.type != "run.finished"
        and now - head.recorded_at >= quiet_for
    ]
    if leases is not None and stalled:
        held = leases.live([stream for stream, _ in stalled], now)
        stalled = [(s, v) for s, v in stalled if held.get(s) != v]
    return stalled


def reap(
    bus: Bus,
    store: EventStore,
    streams: Iterable[str],
    quiet_for: timedelta,
    leases: Leases | None = None,
) -> int:
    """Send the next step of every stalled run among `streams`; returns how many."""
    stalled = stalled_runs(store, streams, quiet_for, leases=leases)
    for stream, version in stalled:
        log.warning(
            "%s: no event for %s; sending its step after v%d again", stream, quiet_for, version
        )
        bus.send(LAB_STEP_TASK, stream, version)
        count_reaped(1)
    return len(stalled)


def unfinished_runs(store: EventStore, campaign: str | None = None) -> list[str]:
    """Every run stream (of `campaign`, if given) that has started and not finished."""
    started: set[str] = set()
    finished: set[str] = set()
    kinds = ["run.started", "run.finished"]
    for record in store.iter_records(types=kinds, correlation=campaign):
        (started if record.type == "run.started" else finished).add(record.stream)
    return sorted(started - finished)
