"""A group of shell commands, as every `labrxiv` group is made.

Typer (its "rich" markup mode) lists a group's commands with each one's docstring's first
paragraph, line breaks kept, so `labrxiv --help` would show sentences cut mid-line
wherever a docstring wraps. Each command listed without a short help of its own gets that
paragraph on one line, which the list wraps to the terminal (typer's plain mode instead
cuts every line at ~45 characters). A command's own help (`labrxiv fork --help`) keeps the
line breaks of every paragraph but the first too, so a terminal narrower than the
docstring would show each of its lines broken in two; each paragraph is one line there
too (a paragraph that starts with click's `\b` keeps its lines).

Every integer option is bounded by the 64 bits the log stores (`labrxiv.cli_bounds`), and
typer showed those bounds in every option's help (`[1<=x<=9223372036854775807]`): the
help shows the bounds a user chooses by (`[x>=1]`), not the storage's.
"""

import inspect
from typing import Any

import typer
from typer.core import TyperGroup

from labrxiv.cli_bounds import INT64_MAX, INT64_MIN


class OneLineHelpGroup(TyperGroup):
    """A command group whose list shows each command's first paragraph as one line."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.help:
            self.help = reflowed(self.help)
        for command in self.commands.values():
            if command.short_help is None and command.help:
                first = inspect.cleandoc(command.help).split("\n\n", 1)[0]
                command.short_help = " ".join(first.split())
            if command.help:
                command.help = reflowed(command.help)
            for param in command.params:
                _storage_bounds_unshown(param)


def _storage_bounds_unshown(param: object) -> None:
    """Show `param`'s range in its help without the 64-bit bounds every integer option
    has (what typer's `_get_number_range_help_str`, per option, gives)."""
    low, high = getattr(param, "min", None), getattr(param, "max", None)
    if low != INT64_MIN and high != INT64_MAX:
        return
    low = None if low == INT64_MIN else low
    high = None if high == INT64_MAX else high

    def described() -> str | None:
        if low is None and high is None:
            return None
        if low is None:
            return f"x<={high}"
        return f"x>={low}" if high is None else f"{low}<=x<={high}"

    setattr(param, "_get_number_range_help_str", described)  # noqa: B010 - typer's hook


def reflowed(help: str) -> str:  # noqa: A002 - click's name
    """`help` with each paragraph on one line, for the terminal to wrap (but a paragraph
    that starts with `\\b`, click's mark for lines kept as written)."""
    paragraphs = inspect.cleandoc(help).split("\n\n")
    return "\n\n".join(p if p.startswith("\b") else " ".join(p.split()) for p in paragraphs)


def command_group(help: str, **options: Any) -> typer.Typer:  # noqa: A002 - typer's name
    """A Typer app with `help` whose command list shows one line a command."""
    options.setdefault("cls", OneLineHelpGroup)
    return typer.Typer(help=help, **options)
