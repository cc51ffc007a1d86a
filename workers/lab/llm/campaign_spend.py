"""What a campaign has spent on models, folded incrementally from the log by a worker.

A campaign with a token or dollar budget is checked before every model call of every
run. Re-reading all of the campaign's model events for each check costs O(calls) per
step and O(calls²) per campaign; positions are committed in order (a later read never
misses an earlier event), so each worker folds a campaign's events once and then reads
only those after the last position it folded.
"""

import threading
from collections import OrderedDict
from dataclasses import dataclass, field

from events import EventStore
from events.recorded import Recorded
from workers.lab.llm.history import mapping_tokens

BUDGETED_TYPES = ("model.called", "model.responded", "model.failed", "experiment.scored")
"""What a campaign's token and dollar budget counts: model calls and model-using gradings."""


@dataclass
class Spend:
    """One campaign's spend, folded up to `position`."""

    position: int = 0
    tokens: int = 0
    dollars: float = 0.0
    last: dict[str, tuple[int, float]] = field(default_factory=dict)
    """Per run: the tokens and dollars of its last answer."""
    in_flight: set[str] = field(default_factory=set)
    """Runs with a call written ahead and no outcome recorded yet."""

    def add(self, record: Recorded) -> None:
        """Fold one event of `BUDGETED_TYPES` in."""
        self.position = record.position
        if record.type == "model.called":
            self.in_flight.add(record.stream)
            return
        if record.type == "experiment.scored":
            self.tokens += mapping_tokens(record.payload.get("grader_usage"))
            self.dollars += record.payload.get("grader_cost_usd") or 0.0
            return
        self.in_flight.discard(record.stream)
        if record.type == "model.responded":
            used = mapping_tokens(record.payload.get("usage"))
            cost = record.payload.get("cost_usd") or 0.0
            self.tokens, self.dollars = self.tokens + used, self.dollars + cost
            self.last[record.stream] = (used, cost)

    def used(self, stream: str) -> tuple[int, float]:
        """Tokens and dollars used, counting for each call of a run other than `stream`
        that is in flight that run's last answer again, as an estimate of its cost."""
        tokens, dollars = self.tokens, self.dollars
        for run in self.in_flight:
            if run != stream and run in self.last:
                tokens, dollars = tokens + self.last[run][0], dollars + self.last[run][1]
        return tokens, dollars


class CampaignSpend:
    """Each campaign's spend as this worker last read it; one instance serves its threads.

    A campaign's fold is read on under its own lock (a long first read of one campaign
    does not hold up the budget checks of another)."""

    def __init__(self, store: EventStore, max_campaigns: int = 64) -> None:
        self.store = store
        self.max_campaigns = max_campaigns
        self._spends: OrderedDict[str, tuple[threading.Lock, Spend]] = OrderedDict()
        self._lock = threading.Lock()

    def used(self, campaign: str, stream: str) -> tuple[int, float]:
        """Tokens and dollars the campaign used up to now, as `Spend.used` counts them."""
        with self._lock:
            if campaign not in self._spends:
                self._spends[campaign] = (threading.Lock(), Spend())
            self._spends.move_to_end(campaign)
            lock, spend = self._spends[campaign]
            while len(self._spends) > self.max_campaigns:
                self._spends.popitem(last=False)
        with lock:
            records = self.store.iter_records(
                spend.position, types=BUDGETED_TYPES, correlation=campaign
            )
            for record in records:
                spend.add(record)
            return spend.used(stream)
