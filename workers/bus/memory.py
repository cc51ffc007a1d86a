"""A bus that keeps what is sent instead of delivering it: for benchmarks and tests
that take steps or record batches by hand and look at what would have been sent."""

import threading
from typing import Any


class MemoryBus:
    """Keeps every `send` as (task, args), in order; thread-safe."""

    stopped = False

    def __init__(self) -> None:
        self.sent: list[tuple[str, tuple[Any, ...]]] = []
        self._lock = threading.Lock()

    def send(self, task: str, *args: Any) -> None:
        """Keep `task(*args)`."""
        with self._lock:
            self.sent.append((task, args))

    def close(self) -> None:
        """Nothing to release."""
