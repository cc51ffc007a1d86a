"""The `labrxiv` command's entry point (`pyproject.toml`'s script).

Importing the command line takes a second or two (SQLAlchemy, pydantic, the openai SDK);
a Ctrl-C pressed then, before any command could handle it, printed Python's traceback
of the import it stopped. Here it ends the command as a Ctrl-C should: one line, exit
130, nothing started and so nothing left half done.
"""

import sys

from labrxiv.exit_codes import EXIT_INTERRUPTED


def main() -> None:
    """Import the command line, then run it."""
    try:
        from labrxiv.cli import app
    except KeyboardInterrupt:
        print("labrxiv: interrupted while starting; nothing was done", file=sys.stderr)
        raise SystemExit(EXIT_INTERRUPTED) from None
    app()
