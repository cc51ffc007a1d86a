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


def _commands() -> list[tuple[list[str], str]]:
    """Every command and group, with the arguments that reach it, and its help text."""
    root = typer.main.get_command(app)
    found: list[tuple[list[str], str]] = []

    def walk(command: object, path: list[str]) -> None:
        help_text = getattr(command, "help", None) or ""
        if len(help_text.split("\n\n")) > 1:
            found.append((path, help_text))
        for name, child in getattr(command, "commands", {}).items():
            walk(child, [*path, name])

    walk(root, [])
    return found


@pytest.mark.parametrize(
    ("args", "help_text"), [pytest.param(a, h, id=" ".join(a) or "root") for a, h in _commands()]
)
def test_a_commands_help_is_whole_sentences_wrapped_to_the_terminal(
    args: list[str], help_text: str
) -> None:
    """`labrxiv fork --help` at 80 columns showed "(its attempts, papers," then
    "conversation, spend)…" on the next line: typer kept the docstring's line breaks in
    every paragraph but the first, and wrapped each line again to the terminal."""
    result = CliRunner().invoke(app, [*args, "--help"], env={"COLUMNS": "80"}, terminal_width=80)
    assert result.exit_code == 0, result.output
    shown = result.output.split("Usage:")[1].split("╭")[0]
    shown_lines = [line.strip() for line in shown.splitlines()[1:] if line.strip()]
    width = max(len(line) for line in result.output.splitlines())
    for line, following in zip(shown_lines, shown_lines[1:], strict=False):
        # A line the terminal wrapped is nearly full; a short one ends its paragraph.
        room = width - 2 - len(line)
        assert room < len(following.split()[0]) + 1 or following[:1].isupper(), (
            f"a line broken early: {line!r} then {following!r}"
        )


def _commands() -> list[list[str]]:
    """The arguments that reach every command that is not a group."""
    found = []
    for args, group in _groups():
        for name, command in group.commands.items():
            if not isinstance(command, TyperGroup):
                found.append([*args, name])
    return found


def test_no_help_shows_the_64_bit_bounds_every_integer_option_has(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every integer option is bounded by what the log stores (`labrxiv.cli_bounds`): its
    help shows the bound a user chooses by, `[x>=1]`, not `[1<=x<=9223372036854775807]`."""
    monkeypatch.setattr(typer.rich_utils, "MAX_WIDTH", 2000)  # nothing wraps
    commands = _commands()
    assert len(commands) > 20
    for args in commands:
        result = CliRunner().invoke(app, [*args, "--help"])
        assert result.exit_code == 0, result.output
        assert "9223372036854775807" not in result.output, args
        assert "-9223372036854775808" not in result.output, args
    shown = CliRunner().invoke(app, ["campaign", "--help"]).output
    assert "[x>=1]" in shown  # --labs
    refused = CliRunner().invoke(app, ["campaign", "--labs", "99999999999999999999"])
    assert refused.exit_code == 2 and "--labs" in refused.output  # still bounded
