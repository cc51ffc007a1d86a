"""Event types written as bare strings are event types the log knows.

Readers compare a record's type with a string (`event.type == "run.finished"`, `types=
["run.started"]`, `EVENTS.c.type == "phase.entered"`) or keep such strings in sets and
lists (`OVER`, `SPENDING`): a misspelt or renamed one never matches, silently
(`../shared/CODE-READING.md`, item 9). Checked against the payload registry
(`events.payloads.BY_TYPE`): every dotted string compared with a `.type` or passed as
`types=`, and every string anywhere in the code shaped like an event type of a known
domain (`run.…`, `paper.…`: 196 of them, none of which is anything else).
"""

import ast
import re
from collections.abc import Iterator
from pathlib import Path

from events.payloads import BY_TYPE
from tests.sources import sources

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("analysis", "bench", "events", "labrxiv", "projections", "runstate", "workers")
DOMAINS = frozenset(name.split(".", 1)[0] for name in BY_TYPE)
SHAPE = re.compile(r"([a-z]+)\.[a-z_]+")
NOT_EVENTS = frozenset({"papers.html", "paper.html", "campaign.html", "run.html"})
"""Strings shaped like an event type of a known domain that are something else: the
templates of `labrxiv serve`'s pages (labrxiv/web/templates/)."""


def type_strings(tree: ast.AST) -> Iterator[ast.Constant]:
    """Strings compared with a `.type` attribute or passed as `types=`, that look like an
    event type (`domain.name`: other types compared so, a tool call's "function", have
    no dot)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(isinstance(side, ast.Attribute) and side.attr == "type" for side in sides):
                for side in sides:
                    yield from _strings(side)
        elif isinstance(node, ast.keyword) and node.arg == "types":
            yield from _strings(node.value)


def shaped_strings(tree: ast.AST) -> Iterator[ast.Constant]:
    """Every string shaped like an event type of a known domain, wherever it is."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            shaped = SHAPE.fullmatch(node.value)
            if shaped and shaped.group(1) in DOMAINS and node.value not in NOT_EVENTS:
                yield node


def _strings(node: ast.AST) -> Iterator[ast.Constant]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and "." in node.value:
        yield node
    elif isinstance(node, ast.Tuple | ast.List | ast.Set):
        for element in node.elts:
            yield from _strings(element)


def unknown_names(source: str, where: str) -> list[str]:
    tree = ast.parse(source)
    names = {(n.lineno, n.value) for n in [*type_strings(tree), *shaped_strings(tree)]}
    return [f"{where}:{line}: {value!r}" for line, value in sorted(names) if value not in BY_TYPE]


def test_every_event_type_written_as_a_string_is_one_the_log_knows() -> None:
    unknown, seen = [], 0
    for path in sources(PACKAGES):
        source = path.read_text()
        seen += sum(1 for _ in shaped_strings(ast.parse(source)))
        unknown += unknown_names(source, str(path.relative_to(ROOT)))
    assert not unknown, "not event types: " + "; ".join(unknown)
    assert seen > 150, f"only {seen} event types found as strings: is the scan still looking?"


def test_a_misspelt_event_type_is_found() -> None:
    source = (
        'if event.type == "run.finsihed": pass\n'
        'if record.type in ("paper.submitted", "paper.decieded"): pass\n'
        'store.iter_records(types=["run.started", "runs.started"])\n'
        'where = EVENTS.c.type == "phase.enterd"\n'
        'if call.type == "function": pass\n'
        'OVER = {"review.stoped", "paper.decided"}\n'
        'if x.type == "rn.finished": pass\n'
    )
    found = sorted(unknown_names(source, "x.py"))
    assert found == [
        "x.py:1: 'run.finsihed'",
        "x.py:2: 'paper.decieded'",
        "x.py:3: 'runs.started'",
        "x.py:4: 'phase.enterd'",
        "x.py:6: 'review.stoped'",
        "x.py:7: 'rn.finished'",
    ]
