"""What the search policy knows of a run's own attempts, kept up to date incrementally.

A decision needs, over every attempt of the run: its scored results and the best of
them, the configurations tried, how often each pair of values was tried, each value's
mean result, and how long the run has gone without progress. Recomputing those from
all attempts made a decision O(attempts) (2x the CPU at a run's 10,000th event than at
its 100th, bench/step_cost.py); a worker keeps them per run instead and folds in only
the attempts recorded since (an attempt is final once recorded: `evaluate` and its
score are one batch). Every sum is taken in attempt order, as the policy took it
before, so decisions are unchanged to the last bit.
"""

import bisect
import threading
from collections import Counter
from collections.abc import Hashable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from events.bounded_cache import BoundedCache
from runstate import Attempt, RunState
from workers.gym.card import Subtask
from workers.gym.scoring import PROGRESS, better, over_baseline

if TYPE_CHECKING:
    from workers.lab.policies.search.space import Space


def config_key(config: dict[str, Any]) -> Hashable:
    """A configuration as a set member: equal configurations, equal keys."""
    return tuple(sorted((key, _frozen(value)) for key, value in config.items()))


def _frozen(value: Any) -> Hashable:
    if isinstance(value, dict):
        return config_key(value)
    if isinstance(value, list):
        return tuple(_frozen(v) for v in value)
    return value


def pairs(config: dict[str, Any], keys: list[str]) -> Iterator[tuple[str, Any, str, Any]]:
    """Every pair of the configuration's values of `keys`, as (key, value, key, value)."""
    for i, a in enumerate(keys):
        for b in keys[i + 1 :]:
            yield a, _frozen(config.get(a)), b, _frozen(config.get(b))


@dataclass(frozen=True)
class Known:
    """A configuration and its primary score, from the run's attempts or a paper it read."""

    score: float
    config: dict[str, Any]
    measured: bool
    """Graded: by this run, or by the author's run (verified by the archive)."""
    own: bool = False
    """Measured by this run."""


@dataclass
class RunMemory:
    """A run's attempts [0, `attempts`) summed up for the policy's next decision."""

    space: "Space"
    """The task's search space: which parameters apply, when two configurations are one."""
    attempts: int = 0
    last: Attempt | None = None
    """The last attempt folded in (a check that the run is the one remembered)."""
    own: list[Known] = field(default_factory=list)
    """The scored attempts, in order (their configurations in canonical form)."""
    tried: set[Hashable] = field(default_factory=set)
    """The configurations of every attempt (`Space.key`)."""
    scored: set[Hashable] = field(default_factory=set)
    """The configurations of scored attempts."""
    pair_counts: Counter[tuple[str, Any, str, Any]] = field(default_factory=Counter)
    """How many attempts set each pair of values of parameters that apply."""
    value_sums: dict[tuple[str, Hashable], list[float]] = field(default_factory=dict)
    """Per (parameter, value): [sum of results over the baseline, count] of scored attempts
    in which the parameter applies."""
    total: float = 0.0
    """The sum of every scored attempt's result over the baseline."""
    top: Known | None = None
    """The first of the best-scoring attempts."""
    ranked: list[tuple[float, int]] = field(default_factory=list)
    """(−result over the baseline, index into `own`): the scored attempts, best first."""
    progress: float | None = None
    stuck: int = 0
    """Attempts since the last one that beat the best before it by `PROGRESS`."""

    def add(self, attempt: Attempt, primary: Subtask) -> None:
        """Fold the run's next attempt in."""
        self.attempts += 1
        self.last = attempt
        config = self.space.canonical(attempt.config)
        applies = self.space.applicable(config)
        key = config_key(config)
        self.tried.add(key)
        self.pair_counts.update(pairs(config, applies))
        if attempt.scores is None:
            self.stuck += 1
            return
        result = Known(attempt.scores[primary.name], config, True, own=True)
        value = over_baseline(primary, result.score)
        self.scored.add(key)
        bisect.insort(self.ranked, (-value, len(self.own)))
        self.own.append(result)
        self.total += value
        for name in applies:
            sums = self.value_sums.setdefault((name, _frozen(config.get(name))), [0.0, 0])
            sums[0] += value
            sums[1] += 1
        if self.top is None or better(primary, result.score, self.top.score):
            self.top = result
        if self.progress is None or value >= self.progress + PROGRESS:
            self.progress, self.stuck = value, 0
        else:
            self.stuck += 1
            self.progress = max(self.progress, value)


class Memories:
    """Each run's memory, on this worker; the least recently used dropped past `max_runs`."""

    def __init__(self, max_runs: int = 512) -> None:
        self._runs: BoundedCache[str, tuple[threading.Lock, RunMemory]] = BoundedCache(max_runs)

    @contextmanager
    def of(self, state: RunState, primary: Subtask, space: "Space") -> Iterator[RunMemory]:
        """The run's memory with every attempt of `state` folded in, held for the caller
        alone until the block ends."""
        lock, memory = self._runs.obtain(state.stream, lambda: (threading.Lock(), RunMemory(space)))
        with lock:
            seen = memory.attempts
            if seen > len(state.attempts) or (
                seen and state.attempts[seen - 1] != memory.last
            ):  # not the run remembered (an older state of it, or another with its name)
                memory = RunMemory(space)
                self._runs.put(state.stream, (lock, memory))
                seen = 0
            for attempt in state.attempts[seen:]:
                memory.add(attempt, primary)
            yield memory
