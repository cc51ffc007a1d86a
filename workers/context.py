"""What a task handler gets: the store, the bus and the reactions, passed explicitly."""

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from events import Event, EventStore
from workers.bus.base import Bus
from workers.lab.campaign_spend import CampaignSpend
from workers.stream_cache import StreamCache

Reaction = Callable[["WorkerContext", Sequence[Event]], None]
"""Called after an append with the events just recorded (e.g. schedule a run's next step)."""


@dataclass
class WorkerContext:
    """Everything a handler may touch; built once per worker process."""

    store: EventStore
    bus: Bus
    reactions: list[Reaction] = field(default_factory=list)
    max_message_bytes: int = 16 * 1024 * 1024
    """Messages larger than this are dead-lettered, not parsed."""
    labs: Any = None
    """`workers.lab.services.LabServices` on workers that take lab steps."""
    streams: StreamCache = field(init=False)
    """Streams this worker read, so it reads only what is new in them."""
    spend: CampaignSpend = field(init=False)
    """Campaigns' model spend as this worker folded it, for their budgets."""

    def __post_init__(self) -> None:
        self.streams = StreamCache(self.store)
        self.spend = CampaignSpend(self.store)
