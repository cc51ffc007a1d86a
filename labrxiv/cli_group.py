"""A group of shell commands, as every `labrxiv` group is made.

Typer (its "rich" markup mode) lists a group's commands with each one's docstring's first
paragraph, line breaks kept: `labrxiv --help` showed sentences cut mid-line wherever a
docstring wrapped. Each command listed without a short help of its own gets that
paragraph on one line, which the list wraps to the terminal (typer's plain mode instead
cut every line at ~45 characters).
"""

import inspect
from typing import Any

import typer
from typer.core import TyperGroup


class OneLineHelpGroup(TyperGroup):
    """A command group whose list shows each command's first paragraph as one line."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for command in self.commands.values():
            if command.short_help is None and command.help:
                first = inspect.cleandoc(command.help).split("\n\n", 1)[0]
                command.short_help = " ".join(first.split())


def command_group(help: str, **options: Any) -> typer.Typer:  # noqa: A002 - typer's name
    """A Typer app with `help` whose command list shows one line a command."""
    options.setdefault("cls", OneLineHelpGroup)
    return typer.Typer(help=help, **options)
