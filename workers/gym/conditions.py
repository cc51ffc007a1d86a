"""Conditional parameters of a card's search space (`[search_space_conditions]`).

An entry `weights = { n_neighbors = [5, 15] }` says that `weights` applies only when
`n_neighbors` applies and is 5 or 15; an entry may list several parameters (all must
hold) and a single value instead of a list. A parameter with no entry always applies.
A parameter that does not apply has no effect on the experiment, so two configurations
that differ only in parameters that do not apply are the same experiment.

These functions take plain mappings, so `tasks validate` checks a raw card with them
and the validated card (`TaskCard.applicable`) answers with the same rules.
"""

from collections.abc import Mapping, Sequence
from typing import Any

Conditions = Mapping[str, Mapping[str, Sequence[Any]]]
"""Parameter → (parameter it depends on → the values under which it applies)."""


def applicable(
    conditions: Conditions, names: Sequence[str], config: Mapping[str, Any]
) -> list[str]:
    """The parameters of `names` that apply in `config`, in the order of `names`
    (`conditions` without cycles: `problems` names those)."""
    memo: dict[str, bool] = {}

    def applies(name: str) -> bool:
        if name not in memo:
            memo[name] = all(
                applies(other) and among(config.get(other), values)
                for other, values in conditions.get(name, {}).items()
            )
        return memo[name]

    return [name for name in names if applies(name)]


def when(conditions: Conditions, name: str) -> str:
    """When `name` applies, in words, with what the parameters it depends on need in turn
    ("model is knn and n_neighbors is one of 5, 15"); "" when it always applies."""
    return " and ".join(dict.fromkeys(_needs(conditions, name)))


def _needs(conditions: Conditions, name: str) -> list[str]:
    """What `name`'s conditions say, those of the parameters they read first (a card's
    conditions have no cycle: `problems`)."""
    said = []
    for other, values in conditions.get(name, {}).items():
        said += _needs(conditions, other)
        shown = values[0] if len(values) == 1 else f"one of {', '.join(map(str, values))}"
        said.append(f"{other} is {shown}")
    return said


def among(value: Any, values: Sequence[Any]) -> bool:
    """Whether `value` is one of `values` (`true` is not `1`, as it is in Python)."""
    return any(value == v and isinstance(value, bool) == isinstance(v, bool) for v in values)


def as_lists(raw: Mapping[str, Any]) -> dict[str, Any]:
    """A `[search_space_conditions]` table with each single value made a one-item list."""
    return {
        name: {other: v if isinstance(v, list) else [v] for other, v in entry.items()}
        if isinstance(entry, Mapping)
        else entry
        for name, entry in raw.items()
    }


def problems(space: Mapping[str, Any], conditions: Mapping[str, Any]) -> list[str]:
    """Every problem of `conditions` (lists made by `as_lists`) against `space`, one line
    each: an entry or a parameter it names that the search space lacks, a value that is
    not among that parameter's values, a parameter conditioned on itself, a cycle. An
    entry that is not a table is left to the card's field check."""
    found = []
    for name, entry in conditions.items():
        where = f"search_space_conditions.{name}"
        if name not in space:
            found.append(f"{where}: {name!r} is not a parameter of search_space")
        if not isinstance(entry, Mapping):
            continue  # not a table: the card's field check names it
        if not entry:
            found.append(f"{where}: names no parameter it depends on")
        for other, values in entry.items():
            if other == name:
                found.append(f"{where}: conditioned on itself")
            elif other not in space:
                found.append(f"{where}: depends on {other!r}, not a parameter of search_space")
            elif not values:
                found.append(f"{where}.{other}: lists no values")
            else:
                found += [
                    f"{where}.{other}: {value!r} is not one of {other}'s values {space[other]}"
                    for value in values
                    if isinstance(space[other], list) and not among(value, space[other])
                ]
    return found + _cycles(conditions)


def _cycles(conditions: Mapping[str, Any]) -> list[str]:
    """One line per cycle of dependencies (a parameter that applies only when one that
    depends on it applies), each named by its parameters in order."""
    graph = {
        name: sorted(other for other in entry if other != name and other in conditions)
        for name, entry in conditions.items()
        if isinstance(entry, Mapping)
    }
    found: list[str] = []
    done: set[str] = set()

    def visit(name: str, path: list[str]) -> None:
        if name in path:
            cycle = path[path.index(name) :] + [name]
            found.append(f"search_space_conditions: a cycle: {' -> '.join(cycle)}")
            return
        if name in done:
            return
        for other in graph.get(name, []):
            visit(other, [*path, name])
        done.add(name)

    for name in sorted(graph):
        visit(name, [])
    return found
