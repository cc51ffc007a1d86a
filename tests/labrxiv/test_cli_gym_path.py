"""`--gym-path` is accepted wherever a task is named, with one definition.

docs/tasks.md presents `--gym-path` as the way to find bundles, yet only `tasks list` and
`tasks show` took it: `campaign --gym-path` was "No such option" (found running labrxiv
from outside, with a bundle written from the docs)."""

import shutil
from pathlib import Path
from typing import Any

import pytest
import typer
from cli_support import Cli

from labrxiv.cli import app
from labrxiv.cli_common import GYM_PATH_HELP

GYM = Path(__file__).parents[2] / "gym"
COMMANDS = [
    ["campaign"],
    ["demo"],
    ["fork"],
    ["resume"],
    ["papers", "top"],
    ["tasks", "list"],
    ["tasks", "show"],
]
"""Every command that names a task or runs one's steps."""


def options_of(path: list[str]) -> dict[str, Any]:
    """The options of `labrxiv *path`, by their first name (typer's own click objects)."""
    found: Any = typer.main.get_command(app)
    for name in path:
        found = found.commands[name]
    return {p.opts[0]: p for p in found.params if p.param_type_name == "option"}


@pytest.mark.parametrize("path", COMMANDS, ids=" ".join)
def test_every_command_naming_a_task_takes_the_one_gym_path_option(path: list[str]) -> None:
    options = options_of(path)
    assert "--gym-path" in options, f"labrxiv {' '.join(path)} has no --gym-path"
    assert options["--gym-path"].help == GYM_PATH_HELP and options["--gym-path"].multiple


def test_a_campaign_finds_a_bundle_by_gym_path(workdir: Path, cli: Cli) -> None:
    gym = workdir / "my-tasks"
    shutil.copytree(GYM / "continual-digits", gym / "bare")
    card = (gym / "bare" / "task.toml").read_text()
    card = card.replace('id = "continual-digits"', 'id = "bare"')
    (gym / "bare" / "task.toml").write_text(card[: card.index("[search_space]")])
    said = cli("campaign", "--task", "bare")
    assert said.code == 2 and "no task 'bare'" in said.text, said.out
    # Found: its card is read (and refused for what it lacks, before any run starts).
    said = cli("campaign", "--task", "bare", "--gym-path", str(gym))
    assert said.code == 2, said.out
    assert "task.toml: policies: 'search' needs a search_space" in said.text, said.out


def test_a_distributed_campaign_says_its_gym_path_is_not_the_workers(
    workdir: Path, cli: Cli, closed_port: int
) -> None:
    """The workers of a campaign on Redis look for bundles by their own settings."""
    gym = workdir / "my-tasks"
    shutil.copytree(GYM / "continual-digits", gym / "digits-2")
    card = (gym / "digits-2" / "task.toml").read_text()
    (gym / "digits-2" / "task.toml").write_text(card.replace('"continual-digits"', '"digits-2"'))
    away = f"redis://127.0.0.1:{closed_port}/0"
    said = cli(
        "campaign", "--task", "digits-2", "--gym-path", str(gym),
        LABRXIV_REDIS_URL=away, LABRXIV_DATABASE_URL=f"sqlite:///{workdir / 'log.db'}",
    )  # fmt: skip
    assert said.code == 1 and f"cannot reach Redis at {away}" in said.text, said.out
    assert (
        "--gym-path is this command's: workers find bundles by their LABRXIV_GYM_PATH" in said.text
    )
