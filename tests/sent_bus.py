"""A bus for tests that take one step in place: it keeps what it is asked to send."""

from typing import Any

import orjson

from workers.bus.base import RECORD_TASK


class Sent(list[tuple[str, tuple[Any, ...]]]):
    """A bus that keeps what it is asked to send and runs nothing."""

    stopped = False

    def send(self, task: str, *args: Any) -> None:
        self.append((task, args))

    def close(self) -> None:
        pass

    def published(self) -> list[dict[str, Any]]:
        """The events of every batch sent to the recorder, in order."""
        batches = [orjson.loads(args[0])["events"] for task, args in self if task == RECORD_TASK]
        return [event for batch in batches for event in batch]
