"""A group of shell commands, as every `labrxiv` group is made.

Typer (its "rich" markup mode) lists a group's commands with each one's docstring's first
paragraph, line breaks kept: `labrxiv --help` showed sentences cut mid-line wherever a
docstring wrapped. Each command listed without a short help of its own gets that
paragraph on one line, which the list wraps to the terminal (typer's plain mode instead
cut every line at ~45 characters). A command's own help (`labrxiv fork --help`) kept the
line breaks of every paragraph but the first too, so a terminal narrower than the
docstring showed each of its lines broken in two; each paragraph is now one line there
too (a paragraph that starts with click's `\b` keeps its lines).
"""

import inspect
from typing import Any

import typer
from typer.core import TyperGroup


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


def reflowed(help: str) -> str:  # noqa: A002 - click's name
    """`help` with each paragraph on one line, for the terminal to wrap (but a paragraph
    that starts with `\\b`, click's mark for lines kept as written)."""
    paragraphs = inspect.cleandoc(help).split("\n\n")
    return "\n\n".join(p if p.startswith("\b") else " ".join(p.split()) for p in paragraphs)


def command_group(help: str, **options: Any) -> typer.Typer:  # noqa: A002 - typer's name
    """A Typer app with `help` whose command list shows one line a command."""
    options.setdefault("cls", OneLineHelpGroup)
    return typer.Typer(help=help, **options)
