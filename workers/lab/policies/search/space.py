"""The task's search space as the search policy moves in it, conditions included.

A parameter that does not apply in a configuration (`TaskCard.applicable`) keeps the
starter's value: it has no effect there, and the starter's value is the one the bundle's
author wrote for it, so a configuration has one written form (`canonical`) however it
was reached, and two that differ only in parameters that do not apply are one
configuration (`key`). Keeping the base's value instead would make the same experiment
look new each time a parameter that does not apply changed on the way. A card without
conditions leaves every configuration as it is, so its decisions are those of a space
without the notion.
"""

import itertools
import math
import random
from collections.abc import Callable, Collection, Hashable
from dataclasses import dataclass
from typing import Any

from workers.gym.card import TaskCard
from workers.lab.policies.search.memory import config_key


@dataclass(frozen=True)
class Space:
    """The card's search space and the starter configuration it departs from."""

    card: TaskCard
    starter: dict[str, Any]

    @property
    def values(self) -> dict[str, list[Any]]:
        """Each parameter's allowed values."""
        return self.card.search_space

    @property
    def names(self) -> list[str]:
        """The parameters, sorted."""
        return sorted(self.card.search_space)

    def applicable(self, config: dict[str, Any]) -> list[str]:
        """The parameters that apply in `config`, sorted."""
        return self.card.applicable(config)

    def canonical(self, config: dict[str, Any]) -> dict[str, Any]:
        """`config` with each parameter that does not apply set to the starter's value."""
        if not self.card.search_space_conditions:
            return config
        applies = set(self.applicable(config))
        return {
            key: self.starter[key]
            if key in self.values and key not in applies and key in self.starter
            else value
            for key, value in config.items()
        }

    def key(self, config: dict[str, Any]) -> Hashable:
        """`config` as a set member: configurations that apply alike, equal keys."""
        return config_key(self.canonical(config))

    def settle(
        self,
        rng: random.Random,
        candidate: dict[str, Any],
        base: dict[str, Any],
        moved: Collection[str],
        weights: dict[str, list[float]],
    ) -> dict[str, Any]:
        """`candidate` (a move from `base` that set the parameters `moved`) in canonical
        form, each parameter the move made applicable and did not set drawn from its
        values by `weights`, as a moved value is (and so on down a chain)."""
        if not self.card.search_space_conditions:
            return candidate
        before = set(self.applicable(base))
        drawn = set(moved)
        while new := [k for k in self.applicable(candidate) if k not in before | drawn]:
            for key in new:
                candidate[key] = rng.choices(self.values[key], weights[key])[0]
            drawn.update(new)
        return self.canonical(candidate)

    def first_untried(self, tried: Callable[[dict[str, Any]], bool]) -> dict[str, Any] | None:
        """The first configuration of the space, in the order of its values, that `tried`
        says was not tried; None when every one was. Only for a space of at most
        `ENUMERABLE` combinations of values (`enumerable`)."""
        names = self.names
        rest = {k: v for k, v in self.starter.items() if k not in self.values}
        for values in itertools.product(*(self.values[name] for name in names)):
            config = self.canonical(dict(zip(names, values, strict=True)) | rest)
            if not tried(config):
                return config
        return None

    @property
    def enumerable(self) -> bool:
        """Whether the space is small enough to look through whole (`first_untried`)."""
        return math.prod(len(values) for values in self.values.values()) <= ENUMERABLE


ENUMERABLE = 20_000
"""The most combinations of values the search looks through for one it has not tried, when
its draws found none (a space that large is not used up by a lab's attempts)."""
