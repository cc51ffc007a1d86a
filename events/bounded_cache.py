"""A bounded in-memory map that lets its least recently used entries go.

What a worker or a projector keeps in memory between pages or steps (folded runs, parsed
answers, calls written ahead, runs' phases…) is a cache of what the log holds: bounded,
so a long-lived process does not grow with the number of runs it has seen, and never
wrong when an entry is missing (it is read from the log again).
"""

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class BoundedCache(Generic[K, V]):
    """Entries by key, the least recently used dropped past `capacity`; safe across threads.

    `capacity` bounds the number of entries, or with `weight` the sum of their weights
    (the most recent entry is kept whatever its weight)."""

    def __init__(self, capacity: int, weight: Callable[[V], int] | None = None) -> None:
        if capacity < 1:
            raise ValueError(f"a cache's capacity must be at least 1, not {capacity}")
        self.capacity = capacity
        self._weight = weight
        self._entries: OrderedDict[K, V] = OrderedDict()
        self._total = 0
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, object]:
        """What pickling keeps (a projector is sent to the process that rebuilds it):
        everything but the lock, which is made anew."""
        with self._lock:
            state = {key: value for key, value in vars(self).items() if key != "_lock"}
            state["_entries"] = OrderedDict(self._entries)  # not the live one: a put meanwhile
            return state

    def __setstate__(self, state: dict[str, object]) -> None:
        vars(self).update(state)
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        """Whether `key` is kept (without making it recently used)."""
        return key in self._entries

    def get(self, key: K) -> V | None:
        """The entry of `key`, made the most recently used; None when it is not kept."""
        with self._lock:
            value = self._entries.get(key)
            if value is not None or key in self._entries:
                self._entries.move_to_end(key)
            return value

    def put(self, key: K, value: V) -> None:
        """Keep `value` under `key` as the most recently used entry."""
        with self._lock:
            self._put(key, value)

    def obtain(self, key: K, make: Callable[[], V]) -> V:
        """The entry of `key`, made the most recently used; a new one from `make` when it
        is not kept."""
        with self._lock:
            if key in self._entries:
                self._entries.move_to_end(key)
                return self._entries[key]
            value = make()
            self._put(key, value)
            return value

    def pop(self, key: K) -> V | None:
        """Remove the entry of `key` and return it (None when it is not kept)."""
        with self._lock:
            if key not in self._entries:
                return None
            value = self._entries.pop(key)
            self._total -= self._weigh(value)
            return value

    def _put(self, key: K, value: V) -> None:
        if key in self._entries:
            self._total -= self._weigh(self._entries[key])
        self._entries[key] = value
        self._entries.move_to_end(key)
        self._total += self._weigh(value)
        while self._total > self.capacity and len(self._entries) > 1:
            _, dropped = self._entries.popitem(last=False)
            self._total -= self._weigh(dropped)

    def _weigh(self, value: V) -> int:
        return 1 if self._weight is None else self._weight(value)
