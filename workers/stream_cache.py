"""Run states and first events of streams, kept in memory by a worker.

A recorded event never changes and a stream's versions are contiguous (the store
refuses gaps and stale versions), so a worker that folded a run up to version v only
needs the events after v next time: a lab step reads and folds only what is new since
the run's last step on this worker, whatever the run's length (folding the whole
stream at every step would cost O(n²) a run).
"""

import threading

from events import Event, EventStore
from events.bounded_cache import BoundedCache
from runstate import RunState, begin, fold_from


class StreamCache:
    """Folded run states by stream (each at the version it was folded to) and streams'
    first events; the least recently used dropped past `max_streams`."""

    def __init__(self, store: EventStore, max_streams: int = 512) -> None:
        self.store = store
        self._states: BoundedCache[str, RunState] = BoundedCache(max_streams)
        self._firsts: BoundedCache[str, Event] = BoundedCache(max_streams)
        self._lock = threading.Lock()
        """Held to compare and keep a state: the later of two folds is kept."""

    def run_state(self, stream: str) -> RunState | None:
        """The run's state folded up to its last recorded event (None: no such stream)."""
        cached = self._states.get(stream)
        if cached is None:
            events = self.store.read_stream(stream)
            if not events:
                return None
            state = fold_from(begin(events[0], self._upto), events[1:])
        else:
            state = fold_from(cached, self.store.read_stream(stream, after_version=cached.version))
        with self._lock:
            held = self._states.get(stream)
            if held is None or held.version <= state.version:
                self._states.put(stream, state)
        return state

    def _upto(self, stream: str, version: int) -> list[Event]:
        """A parent's events up to a fork point (read once per fork: the fork's state is
        cached and folded incrementally from then on)."""
        return self.store.read_stream(stream, limit=version + 1)

    def first(self, stream: str) -> Event | None:
        """The stream's first event (a campaign's or run's start), read once."""
        cached = self._firsts.get(stream)
        if cached is not None:
            return cached
        events = self.store.read_stream(stream, after_version=-1, limit=1)
        if not events:
            return None
        self._firsts.put(stream, events[0])
        return events[0]
