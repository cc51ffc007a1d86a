"""`labrxiv --help` and each group's: one line a command in the list, at any width.

Typer kept the line breaks of a command's docstring in its group's list, so a sentence was
cut wherever the docstring wrapped (`analyze`, `papers top`, `tasks validate`…)."""

import pytest
import typer
import typer.rich_utils
from typer.core import TyperGroup
from typer.testing import CliRunner

from labrxiv.cli import app


def _groups() -> list[tuple[list[str], TyperGroup]]:
    """The root group and every group under it, with the arguments that reach each."""
    root = typer.main.get_command(app)
    assert isinstance(root, TyperGroup)
    found = [([], root)]
    for name, command in root.commands.items():
        if isinstance(command, TyperGroup):
            found.append(([name], command))
    return found


@pytest.mark.parametrize(
    ("args", "group"), [pytest.param(a, g, id=" ".join(a) or "root") for a, g in _groups()]
)
def test_every_command_is_listed_on_one_line_when_the_terminal_is_wide(
    monkeypatch: pytest.MonkeyPatch, args: list[str], group: TyperGroup
) -> None:
    monkeypatch.setattr(typer.rich_utils, "MAX_WIDTH", 2000)  # nothing wraps
    result = CliRunner().invoke(app, [*args, "--help"])
    assert result.exit_code == 0, result.output
    panel = result.output.split("Commands")[1].split("╰")[0].splitlines()[1:]
    names = [line.strip("│ ").split()[0] for line in panel if line.strip("│ ")]
    assert sorted(names) == sorted(group.commands), "a line that is not a new command"
    assert len(names) >= 1
