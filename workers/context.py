"""What a task handler gets: the store, the bus and the reactor, passed explicitly."""

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from events import EventStore
from events.bounded_cache import BoundedCache
from workers.bus.base import Bus
from workers.lab.campaign_spend import CampaignSpend
from workers.lab.lease import Leases
from workers.reactor import Reactor
from workers.stream_cache import StreamCache

if TYPE_CHECKING:  # the model client is imported by the workers that call models only
    from workers.llm.request import PreparedCall

PREPARED_KEPT = 1024
"""Calls written ahead that a worker keeps until it sends them."""


@dataclass
class WorkerContext:
    """Everything a handler may touch; built once per worker process."""

    store: EventStore
    bus: Bus
    reactor: Reactor | None = None
    """Sends what follows recorded events (a run's next step…), from the log: the
    recorder catches it up after each append (`workers.reactor`)."""
    leases: Leases | None = None
    """Where a step being taken says so, for the reaper (`workers.lab.lease`)."""
    max_message_bytes: int = 16 * 1024 * 1024
    """Messages larger than this are dead-lettered, not parsed."""
    labs: Any = None
    """`workers.lab.services.LabServices` on workers that take lab steps."""
    streams: StreamCache = field(init=False)
    """Streams this worker read, so it reads only what is new in them."""
    spend: CampaignSpend = field(init=False)
    """Campaigns' model spend as this worker folded it, for their budgets."""
    prepared: "BoundedCache[str, PreparedCall]" = field(init=False)
    """Model calls this worker wrote ahead, by request hash, for the step that sends them
    (`workers.llm.driver`)."""

    def __post_init__(self) -> None:
        self.streams = StreamCache(self.store)
        self.spend = CampaignSpend(self.store)
        self.prepared = BoundedCache(PREPARED_KEPT)
