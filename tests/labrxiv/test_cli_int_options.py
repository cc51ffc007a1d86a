"""Every integer a command takes fits the 64 bits the log stores and JSON carries: an
option or argument without bounds took 99999999999999999999 and failed deep inside
(orjson's "Integer exceeds 64-bit range", SQLite's OverflowError, PostgreSQL's DataError,
numpy's seed check), with a traceback (found running labrxiv from outside)."""

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from cli_support import Cli
from typer.core import TyperGroup

from events import EventStore
from labrxiv.cli import app

BIGGEST = 2**63 - 1


def _commands(command: typer.core.TyperCommand | TyperGroup, path: str = "labrxiv") -> Iterator:
    yield path, command
    if isinstance(command, TyperGroup):
        for name, sub in command.commands.items():
            yield from _commands(sub, f"{path} {name}")


def _integer_parameters() -> list[tuple[str, object]]:
    found = []
    for path, command in _commands(typer.main.get_command(app)):
        for parameter in command.params:
            if parameter.bare_type() == "int":
                found.append((f"{path} {parameter.name}", parameter))
    return found


def test_there_are_integer_parameters_to_check() -> None:
    names = [name for name, _ in _integer_parameters()]
    assert "labrxiv campaign attempts" in names and "labrxiv events tail limit" in names


@pytest.mark.parametrize(("name", "parameter"), _integer_parameters(), ids=str)
def test_every_integer_parameter_is_bounded_to_64_bits(name: str, parameter: Any) -> None:
    assert parameter.max is not None and parameter.max <= BIGGEST, f"{name}: max {parameter.max}"
    assert parameter.min is not None and parameter.min >= -BIGGEST - 1, f"{name}: min"


HUGE = "99999999999999999999"


@pytest.mark.parametrize(
    "command",
    [
        ["events", "tail", "--limit", HUGE],
        ["events", "tail", "--after", HUGE],
        ["events", "tail", "--after", "-5"],
        ["analyze", "x", "--seed", "-1"],
        ["fork", "x", "--at", "3", "--attempts", HUGE],
        ["fork", "x", "--at", "3", "--seed", HUGE],
        ["campaign", "--task", "continual-digits", "--seed", HUGE],
        ["campaign", "--task", "continual-digits", "--context-tokens", "-1"],
    ],
    ids=" ".join,
)
def test_an_integer_out_of_range_is_refused_before_anything(
    tmp_path: Path, cli: Cli, command: list[str]
) -> None:
    said = cli(*command, LABRXIV_DATA_DIR=str(tmp_path / "data"))
    assert said.code == 2, said.out
    assert "Traceback" not in said.out and "Invalid value for" in said.text
    assert not (tmp_path / "data").exists()


def test_a_position_past_64_bits_is_no_event(two_campaigns: EventStore, cli: Cli) -> None:
    said = cli("events", "show", HUGE)
    assert said.code == 1, said.out
    assert f"no event at position {HUGE}" in said.text and "Traceback" not in said.out


def test_the_largest_campaign_seed_gives_lab_seeds_that_fit_64_bits() -> None:
    """A campaign's labs take `seed * LAB_SEEDS + i`: a --seed under 2**63 still made
    lab seeds past what orjson writes (found reviewing the bounds)."""
    from labrxiv.cli_bounds import SEED_MAX
    from workers.lab.campaign import LAB_SEEDS

    assert SEED_MAX == BIGGEST // LAB_SEEDS - 1
    assert (SEED_MAX + 1) * LAB_SEEDS + LAB_SEEDS - 1 > BIGGEST >= SEED_MAX * LAB_SEEDS + 999
