"""Recently read streams, kept in memory by a worker.

A recorded event never changes and a stream's versions are contiguous (the store
refuses gaps and stale versions), so a worker that read a stream up to version v
only needs the events after v next time. A lab step reads its whole run's stream
on every step; with the cache it reads and validates only what is new since its
last step on this worker.
"""

import threading
from collections import OrderedDict

from events import Event, EventStore


class StreamCache:
    """Streams read through this cache, the least recently used dropped past `max_streams`."""

    def __init__(self, store: EventStore, max_streams: int = 512) -> None:
        self.store = store
        self.max_streams = max_streams
        self._streams: OrderedDict[str, list[Event]] = OrderedDict()
        self._lock = threading.Lock()

    def read(self, stream: str) -> list[Event]:
        """The stream's events in version order, as `EventStore.read_stream` returns them."""
        with self._lock:
            cached = self._streams.get(stream, [])
        after = cached[-1].version if cached else -1
        events = cached + self.store.read_stream(stream, after_version=after)
        with self._lock:
            held = self._streams.get(stream, [])
            if len(events) >= len(held):
                self._streams[stream] = events
            self._streams.move_to_end(stream)
            while len(self._streams) > self.max_streams:
                self._streams.popitem(last=False)
        return list(events)

    def first(self, stream: str) -> Event | None:
        """The stream's first event (a campaign's or run's start), read once."""
        with self._lock:
            cached = self._streams.get(stream)
        if cached:
            return cached[0]
        events = self.read(stream)
        return events[0] if events else None
