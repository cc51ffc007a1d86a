"""The reaper: finds runs whose next step was lost and sends it again.

A step message can be lost outside the log's control (Redis restarted empty; kombu's
window between BRPOP and the unacked record; a worker killed mid-step). The log still
says which runs are not finished and when they last moved; sending their next step
again is safe, because a step is addressed by the version it follows. A run whose step
is being taken holds a lease (`workers.lab.lease`) and is left alone, however long
the step takes; a step sent again and still not taken is sent again after a wait that
doubles (`Reaper`), so a backlog is not made longer by copies of what it holds.
"""

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
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


@dataclass
class Reaper:
    """Sends the next step of stalled runs again, each stalled version once a wait: the
    first time after `quiet_for` with no event, again only after twice as long since the
    last resend, and so on up to `MAX_BACKOFF` times `quiet_for`. A step queued behind a
    backlog (slow graders, more labs than workers) is not lost; sending it again at every
    tick only lengthens the queue it waits in."""

    bus: Bus
    store: EventStore
    quiet_for: timedelta
    leases: Leases | None = None
    _sent: dict[str, tuple[int, datetime, int]] = field(default_factory=dict)
    """Per stream: the version whose step was sent again, when, and how many times."""

    def reap(self, streams: Iterable[str], now: datetime | None = None) -> int:
        """Send the next step of every stalled run among `streams` that is due; returns
        how many."""
        now = now or utcnow()
        sent = 0
        for stream, version in stalled_runs(self.store, streams, self.quiet_for, now, self.leases):
            last = self._sent.get(stream)
            times = 0
            if last is not None and last[0] == version:
                _, at, times = last
                if now - at < self.quiet_for * min(2**times, MAX_BACKOFF):
                    continue
            log.warning(
                "%s: no event for %s; sending its step after v%d again%s",
                stream,
                self.quiet_for,
                version,
                f" (resend {times + 1})" if times else "",
            )
            self.bus.send(LAB_STEP_TASK, stream, version)
            self._sent[stream] = (version, now, times + 1)
            sent += 1
        count_reaped(sent)
        return sent


MAX_BACKOFF = 8
"""The longest wait between two resends of one step, in multiples of the stall bound."""


def unfinished_runs(store: EventStore, campaign: str | None = None) -> list[str]:
    """Every run stream (of `campaign`, if given) that has started and not finished."""
    started: set[str] = set()
    finished: set[str] = set()
    kinds = ["run.started", "run.finished"]
    for record in store.iter_records(types=kinds, correlation=campaign):
        (started if record.type == "run.started" else finished).add(record.stream)
    return sorted(started - finished)
