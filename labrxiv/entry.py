"""The `labrxiv` command's entry point (`pyproject.toml`'s script).

Importing the command line takes a second or two (SQLAlchemy, pydantic, the openai SDK);
a Ctrl-C pressed then, before any command could handle it, would print Python's
traceback of the import it stopped. Here it ends the command as a Ctrl-C should: one
line, exit 130, nothing started and so nothing left half done.

A wrong command line (an unknown option, a value out of range, a missing argument) is
said in one line on stderr, naming the command and where its help is, with click's
exit code (2); the command does not start.
"""

import sys

import typer

from labrxiv.exit_codes import EXIT_INTERRUPTED


def main() -> None:
    """Import the command line, then run it."""
    try:
        from labrxiv.cli import app
    except KeyboardInterrupt:
        print("labrxiv: interrupted while starting; nothing was done", file=sys.stderr)
        raise SystemExit(EXIT_INTERRUPTED) from None
    try:
        code = app(standalone_mode=False)
    except typer.TyperException as exc:  # click's errors (typer carries its own click)
        raise SystemExit(said(exc)) from None
    except typer.Abort:
        print("labrxiv: aborted", file=sys.stderr)
        raise SystemExit(1) from None
    raise SystemExit(code if isinstance(code, int) else 0)


def said(exc: typer.TyperException) -> int:
    """Say `exc`, one of click's errors, in one line on stderr; its exit code."""
    context = getattr(exc, "ctx", None)
    where = context.command_path if context is not None else "labrxiv"
    shown = exc.format_message() if hasattr(exc, "format_message") else str(exc)
    message = " ".join(shown.split())
    hint = f" (`{where} --help` says what it takes)" if context is not None else ""
    print(f"{where}: {message}{hint}", file=sys.stderr)
    code = getattr(exc, "exit_code", 2)
    return code if isinstance(code, int) else 2
