"""The `lab` command: the lab's tools from a shell inside the sandbox (`lab --help`).

It prints the tool's output and exits with the tool's exit code; a wrong command line,
an unreadable file or an unreachable lab is one line on stderr and exit 2. Standard
library only: this file runs inside the sandbox.
"""

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

# Inside the sandbox this file is a script beside labclient.py; in labrxiv's own
# checks it is a module of the package that holds both.
if TYPE_CHECKING or __package__:
    from . import labclient
else:
    import labclient

USAGE_ERROR = 2

SYNOPSIS = """usage of each command (COMMAND --help says more):
  lab evaluate
  lab archive search QUERY... [-k N]
  lab archive read PAPER_ID
  lab submit PAPER.md --claims CLAIMS.json [--title T] [--abstract A] [--cites ID ...]
      [--revises ID]
  lab budget
  lab finish [SUMMARY...]

Each prints the tool's output and exits with its exit code (0: done); exit 2: the
command was not sent (a wrong command line, an unreadable file, no lab to reach)."""


class _Parser(argparse.ArgumentParser):
    """A wrong command line is one line naming the command and its help, not a usage box."""

    def error(self, message: str) -> NoReturn:
        self.exit(USAGE_ERROR, f"{self.prog}: {message} (see '{self.prog} --help')\n")


class _Refused(Exception):
    """A file given on the command line cannot be used; the message is one line."""


def parser() -> argparse.ArgumentParser:
    """The command line of `lab`."""
    top = _Parser(
        prog="lab",
        description="The lab's tools: score your solution, read the archive, publish a paper.",
        epilog=SYNOPSIS,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = top.add_subparsers(dest="command", required=True, metavar="COMMAND")
    commands.add_parser(
        "evaluate",
        help="run the solution and score it with the task's grader (one attempt of the budget)",
    )
    archive = commands.add_parser("archive", help="search or read the papers of the archive")
    archive_commands = archive.add_subparsers(
        dest="archive_command", required=True, metavar="{search,read}"
    )
    search = archive_commands.add_parser("search", help="the papers best matching QUERY")
    search.add_argument("query", nargs="+", metavar="QUERY")
    search.add_argument("-k", type=int, default=5, metavar="N", help="how many papers (5)")
    read = archive_commands.add_parser("read", help="a paper in full")
    read.add_argument("paper_id", metavar="PAPER_ID")
    submit = commands.add_parser(
        "submit", help="publish PAPER.md with its claims (--claims CLAIMS.json) to the archive"
    )
    submit.add_argument(
        "paper", type=Path, metavar="PAPER.md", help="the paper in Markdown (all of it is the body)"
    )
    submit.add_argument(
        "--claims",
        type=Path,
        required=True,
        metavar="CLAIMS.json",
        help='a JSON list of {"subtask", "metric", "value", "attempt"}',
    )
    submit.add_argument("--title", help="default: the paper's first '# ' heading")
    submit.add_argument("--abstract", help="default: the first paragraph after the title")
    submit.add_argument(
        "--cites", nargs="+", action="extend", default=[], metavar="ID", help="papers built on"
    )
    submit.add_argument("--revises", metavar="ID", help="your earlier paper this one revises")
    commands.add_parser("budget", help="what is left of the run's budget")
    finish = commands.add_parser("finish", help="end the run (nothing can be done after it)")
    finish.add_argument("summary", nargs="*", metavar="SUMMARY")
    return top


def request(options: argparse.Namespace) -> tuple[str, dict[str, Any]]:
    """The tool to call and its arguments, for the parsed command line."""
    match options.command:
        case "archive" if options.archive_command == "search":
            return "archive_search", {"query": " ".join(options.query), "k": options.k}
        case "archive":
            return "archive_read", {"paper_id": options.paper_id}
        case "submit":
            return "submit", submission(options)
        case "finish":
            return "finish", {"summary": " ".join(options.summary)}
        case command:
            return command, {}


def submission(options: argparse.Namespace) -> dict[str, Any]:
    """The `submit` arguments: the paper's text, its title and abstract, its claims."""
    body = _read(options.paper)
    title, abstract = options.title, options.abstract
    if title is None or abstract is None:
        found_title, found_abstract = title_and_abstract(body)
        if title is None and found_title is None:
            raise _Refused(f"{options.paper}: no '# ' title heading (give --title)")
        if abstract is None and found_abstract is None:
            raise _Refused(f"{options.paper}: no paragraph after the title (give --abstract)")
        title = title if title is not None else found_title
        abstract = abstract if abstract is not None else found_abstract
    args: dict[str, Any] = {
        "title": title,
        "abstract": abstract,
        "body": body,
        "claims": claims(options.claims),
    }
    if options.cites:
        args["cited"] = options.cites
    if options.revises is not None:
        args["revises"] = options.revises
    return args


def title_and_abstract(markdown: str) -> tuple[str | None, str | None]:
    """The first `# ` heading of `markdown` and the first paragraph of text after it."""
    lines = markdown.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("# ")), None)
    if start is None:
        return None, None
    paragraph: list[str] = []
    for line in lines[start + 1 :]:
        text = line.strip()
        if paragraph and (not text or text.startswith("#")):
            break
        if text and not text.startswith("#"):
            paragraph.append(text)
    return lines[start][2:].strip(), "\n".join(paragraph) or None


def claims(path: Path) -> list[dict[str, Any]]:
    """The claims in the JSON file at `path`: a list of objects."""
    try:
        found = json.loads(_read(path))
    except ValueError as exc:
        raise _Refused(f"{path}: not JSON ({exc})") from None
    if not isinstance(found, list) or not all(isinstance(c, dict) for c in found):
        raise _Refused(
            f'{path}: not a JSON list of claims [{{"subtask", "metric", "value", "attempt"}}]'
        )
    return found


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise _Refused(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise _Refused(f"{path}: cannot be read ({exc})") from None


def main(argv: list[str] | None = None) -> int:
    """Run `lab` with `argv`; the exit code."""
    options = parser().parse_args(argv)
    try:
        name, args = request(options)
        answer = labclient.call(name, args)
    except (_Refused, labclient.LabError) as exc:
        print(f"lab {options.command}: {exc}", file=sys.stderr)
        return USAGE_ERROR
    output = answer["output"]
    sys.stdout.write(output if output.endswith("\n") or not output else output + "\n")
    return answer["exit_code"]


if __name__ == "__main__":
    sys.exit(main())
