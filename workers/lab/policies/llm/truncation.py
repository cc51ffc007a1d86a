"""The truncation rule of an `llm` lab's context, on sizes measured once per exchange.

Rule (explicit, recorded as `context.truncated`): the size of a conversation is
estimated at 4 characters a token (its messages serialized as JSON); when the system
prompt, the task brief and every exchange pass `limit` tokens, the oldest exchanges are
dropped, oldest first, until the rest fits, and the latest exchange is always kept
(when it alone does not fit, its longest texts are cut: `context._cut`).

Each exchange is measured once (`ExchangeSizes`); the rule then needs only prefix sums
of those sizes and one binary search, not a re-serialization of the kept exchanges for
every one it drops.
"""

import bisect
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, overload

import orjson
from pyrsistent.typing import PVector

from events.bounded_cache import BoundedCache
from runstate import Exchange

CHARS_PER_TOKEN = 4

Messages = list[dict[str, Any]]


class Cumulative(Sequence[int]):
    """Prefix sums over all exchanges: `self[i]` is the total of exchanges before i.

    Made of the first `count` entries of a cached list of prefix sums (exchanges already
    measured; the list is shared and only grows) and a tail computed for this call."""

    def __init__(self, cached: list[int], count: int, tail: list[int]) -> None:
        self._cached, self._count, self._tail = cached, count, tail

    def __len__(self) -> int:
        return self._count + len(self._tail)

    @overload
    def __getitem__(self, index: int) -> int: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[int]: ...
    def __getitem__(self, index: int | slice) -> int | Sequence[int]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        return self._cached[index] if index < self._count else self._tail[index - self._count]


def first_kept(chars: Sequence[int], head: int, limit: int) -> int:
    """The index of the oldest exchange kept under the rule.

    `chars`: prefix sums of the exchanges' sizes in characters (`len(chars)` is one more
    than the number of exchanges); `head`: the size of the system prompt and brief;
    `limit`: tokens."""
    exchanges = len(chars) - 1
    total = head + chars[-1]
    most = CHARS_PER_TOKEN * limit + CHARS_PER_TOKEN - 1
    """The largest size whose estimate (`size // 4`) is within the limit."""
    if total <= most or exchanges <= 1:
        return 0
    # The first start whose kept size, total - chars[start], fits; at most the latest.
    return bisect.bisect_left(chars, total - most, 0, exchanges - 1)


@dataclass
class _Measured:
    chars: list[int] = field(default_factory=lambda: [0])
    messages: list[int] = field(default_factory=lambda: [0])
    lock: threading.Lock = field(default_factory=threading.Lock)
    groups: dict[int, Messages] = field(default_factory=dict)
    """Rendered exchanges that can no longer change, by index, from `oldest` on."""
    oldest: int = 0
    """The oldest exchange the last conversation kept: the groups before it are dropped."""


class ExchangeSizes:
    """Each run's measured exchanges (size in characters, number of messages), as prefix
    sums, and the rendered messages of those its conversation still keeps, kept by a
    worker; the least recently used runs are dropped past `max_runs`.

    Only exchanges that can no longer change are kept: all of a recorded state's
    exchanges but its last (whose tool results may still be recorded). A conversation
    of a long run keeps a hundred exchanges or more: rendering each again at every call
    (parsing its answer, matching its results) took a tenth of a steps worker's CPU at
    100 embedded labs forty calls into their runs (bench/embedded_scale.py)."""

    def __init__(self, max_runs: int = 512) -> None:
        self._runs: BoundedCache[str, _Measured] = BoundedCache(max_runs)

    def cumulative(
        self,
        stream: str,
        exchanges: PVector[Exchange],
        final: int,
        render: Callable[[Exchange], Messages],
    ) -> tuple[Cumulative, Cumulative]:
        """Prefix sums of the characters and messages of `exchanges`, of which the first
        `final` can no longer change; each of those is rendered and measured once."""
        measured = self._runs.obtain(stream, _Measured)
        with measured.lock:
            for index in range(len(measured.chars) - 1, final):
                group = render(exchanges[index])
                measured.groups[index] = group
                _extend(measured.chars, measured.messages, group)
        chars, messages = [measured.chars[final]], [measured.messages[final]]
        for exchange in exchanges[final:]:
            _extend(chars, messages, render(exchange))
        return (
            Cumulative(measured.chars, final + 1, chars[1:]),
            Cumulative(measured.messages, final + 1, messages[1:]),
        )

    def messages(
        self,
        stream: str,
        exchanges: PVector[Exchange],
        kept: int,
        final: int,
        render: Callable[[Exchange], Messages],
    ) -> Messages:
        """The messages of `exchanges[kept:]`, of which the first `final` can no longer
        change: each of those is rendered once (when measured) and its messages kept while
        the conversation keeps it; the others are rendered now. The messages are shared
        between calls: they are not to be changed (`context._cut` copies what it cuts)."""
        measured = self._runs.obtain(stream, _Measured)
        messages: Messages = []
        with measured.lock:
            for index in range(measured.oldest, kept):
                measured.groups.pop(index, None)
            measured.oldest = kept
            for index in range(kept, min(final, len(exchanges))):
                group = measured.groups.get(index)
                if group is None:
                    group = measured.groups[index] = render(exchanges[index])
                messages += group
        for exchange in exchanges[max(kept, final) :]:
            messages += render(exchange)
        return messages


def _extend(chars: list[int], messages: list[int], group: Messages) -> None:
    chars.append(chars[-1] + len(orjson.dumps(group)))
    messages.append(messages[-1] + len(group))
