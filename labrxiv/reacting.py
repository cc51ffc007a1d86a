"""`labrxiv reactor`: the process that sends reactions from the log and reaps stalls.

Wires `workers.reactor.Reactor` (the lab reactions, at the shared checkpoint) and the
reaper (runs with no event for `stall_seconds` and no step being taken) to the
deployment's store and broker.
"""

import logging
import threading
import time
from dataclasses import dataclass, field
from datetime import timedelta

from events import EventStore
from labrxiv.settings import Settings
from labrxiv.wiring import open_bus, open_store, reactions
from workers.bus.base import Bus
from workers.lab.lease import Leases
from workers.lab.reaper import Reaper
from workers.reactor import Reactor, run_reactor

log = logging.getLogger(__name__)


@dataclass
class Reacting:
    """The reactor and the reaper of one process."""

    store: EventStore
    bus: Bus
    reactor: Reactor
    leases: Leases
    stall_seconds: float
    open_runs: set[str] = field(default_factory=set)
    """Runs started and not finished, as far as `_seen` (followed incrementally)."""
    _seen: int = 0
    _last_reap: float = 0.0
    _reaper: Reaper = field(init=False)

    def __post_init__(self) -> None:
        quiet = timedelta(seconds=self.stall_seconds)
        self._reaper = Reaper(self.bus, self.store, quiet, self.leases)

    def reap(self) -> int:
        """Send again the step of every stalled open run; returns how many."""
        for record in self.store.iter_records(self._seen, types=["run.started", "run.finished"]):
            if record.type == "run.started":
                self.open_runs.add(record.stream)
            else:
                self.open_runs.discard(record.stream)
            self._seen = record.position
        return self._reaper.reap(sorted(self.open_runs))

    def tick(self) -> None:
        """Reap every third of the stall bound."""
        if time.monotonic() - self._last_reap >= self.stall_seconds / 3:
            sent = self.reap()
            if sent:
                log.warning("reactor: sent %d stalled steps again", sent)
            self._last_reap = time.monotonic()

    def follow(self, interval: float, stop: threading.Event | None = None) -> None:
        """Catch up and reap until stopped (faults retried with backoff)."""
        run_reactor(self.reactor, interval, self.tick, stop)

    def close(self) -> None:
        self.bus.close()
        self.store.engine.dispose()


def open_reacting(settings: Settings) -> Reacting:
    """The reactor process's parts, from the settings."""
    store = open_store(settings)
    bus = open_bus(settings)
    reactor, leases = reactions(settings, store, bus)
    return Reacting(store, bus, reactor, leases, settings.stall_seconds)
