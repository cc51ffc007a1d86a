"""What a campaign has spent on models, folded incrementally from the log by a worker.

A campaign with a token or dollar budget is checked before every model call of every
run. Re-reading all of the campaign's model events for each check costs O(calls) per
step and O(calls²) per campaign; positions are committed in order (a later read never
misses an earlier event), so each worker folds a campaign's events once and then reads
only those after the last position it folded. What an event spent is counted by the
one rule in `events.spend`: a call of unknown cost is counted as such, never as $0.
"""

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from events import EventStore
from events.bounded_cache import BoundedCache
from events.recorded import Recorded
from events.spend import NOTHING, Spend, spend_of
from events.streams import stream_kind

BUDGETED_TYPES = ("model.called", "model.responded", "model.failed", "experiment.scored")
"""What a campaign's token and dollar budget counts: model calls and model-using gradings."""


@dataclass
class CampaignFold:
    """One campaign's spend, folded up to `position`."""

    position: int = 0
    spent: Spend = NOTHING
    last: dict[str, Spend] = field(default_factory=dict)
    """Per run: what its last answer spent."""
    in_flight: set[str] = field(default_factory=set)
    """Runs with a call written ahead and no outcome recorded yet."""
    by_kind: dict[str, Spend] = field(default_factory=dict)
    """What the streams of each kind spent (`review`: the campaign's reviewers)."""

    def add(self, record: Recorded) -> None:
        """Fold one event of `BUDGETED_TYPES` in."""
        self.position = record.position
        if record.type == "model.called":
            self.in_flight.add(record.stream)
            return
        spent = spend_of(record.type, record.payload)
        if record.type != "experiment.scored":
            self.in_flight.discard(record.stream)
        if spent is None:
            return
        self.spent += spent
        kind = stream_kind(record.stream)
        self.by_kind[kind] = self.by_kind.get(kind, NOTHING) + spent
        if record.type == "model.responded":
            self.last[record.stream] = spent

    def used(self, stream: str) -> Spend:
        """What the campaign used, counting for each call of a run other than `stream`
        that is in flight that run's last answer again, as an estimate of its cost."""
        used = self.spent
        for run in self.in_flight:
            if run != stream and run in self.last:
                last = self.last[run]
                # An estimate of tokens and dollars only: no call is counted twice.
                used += Spend(
                    input_tokens=last.input_tokens,
                    output_tokens=last.output_tokens,
                    dollars=last.dollars,
                )
        return used


class CampaignSpend:
    """Each campaign's spend as this worker last read it; one instance serves its threads.

    A campaign's fold is read on under its own lock (a long first read of one campaign
    does not hold up the budget checks of another)."""

    def __init__(self, store: EventStore, max_campaigns: int = 64) -> None:
        self.store = store
        self._folds: BoundedCache[str, tuple[threading.Lock, CampaignFold]] = BoundedCache(
            max_campaigns
        )

    def used(self, campaign: str, stream: str) -> Spend:
        """What the campaign used up to now, as `CampaignFold.used` counts it."""
        with self._folded(campaign) as folded:
            return folded.used(stream)

    def used_by(self, campaign: str, kind: str) -> Spend:
        """What the campaign's streams of `kind` (`review`…) spent up to now."""
        with self._folded(campaign) as folded:
            return folded.by_kind.get(kind, NOTHING)

    @contextmanager
    def _folded(self, campaign: str) -> Iterator[CampaignFold]:
        """The campaign's fold, caught up with the log, under its lock."""
        lock, folded = self._folds.obtain(campaign, lambda: (threading.Lock(), CampaignFold()))
        with lock:
            records = self.store.iter_records(
                folded.position, types=BUDGETED_TYPES, correlation=campaign
            )
            for record in records:
                folded.add(record)
            yield folded
