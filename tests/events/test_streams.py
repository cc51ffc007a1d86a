"""Stream names are made and read in `events.streams` only, and read back as made."""

import ast
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from events.ids import derived_id
from events.streams import (
    CAMPAIGN_PREFIX,
    KINDS,
    RUN_PREFIX,
    StreamKind,
    campaign_stream,
    event_id_at,
    inspect_stream,
    is_stream,
    lab_run_stream,
    review_eval_stream,
    review_stream,
    run_stream,
    stream_id,
    stream_kind,
    stream_prefix,
)
from tests.sources import sources

ROOT = Path(__file__).resolve().parent.parent.parent
PACKAGES = ("analysis", "bench", "events", "labrxiv", "projections", "runstate", "workers")
AT = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
NAMERS = {
    "run": run_stream,
    "campaign": campaign_stream,
    "review": review_stream,
    "revieweval": review_eval_stream,
    "inspect": inspect_stream,
}
HAND_MADE = re.compile(rf"(?:{'|'.join(KINDS)})-[A-Za-z0-9_.:-]*")
"""A string that is a stream name of a known kind, or begins one (`"run-"`, `f"run-{x}"`)."""


def test_every_kind_has_its_namer() -> None:
    assert set(NAMERS) == set(KINDS)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("ident", ["c1-0", "0192f1e2-aaaa-7bbb", "p-3f2a", "a.b:c_d"])
def test_a_name_reads_back_as_its_kind_and_id(kind: StreamKind, ident: str) -> None:
    name = NAMERS[kind](ident)
    assert name == f"{kind}-{ident}" and name.startswith(stream_prefix(kind))
    assert (stream_kind(name), stream_id(name)) == (kind, ident)
    assert is_stream(name)


def test_the_names_on_disk_keep_their_shape() -> None:
    assert run_stream("c1-0") == "run-c1-0" and run_stream("c1-0").startswith(RUN_PREFIX)
    assert lab_run_stream("c1", 3) == "run-c1-3" and stream_id(lab_run_stream("c1", 3)) == "c1-3"
    assert campaign_stream("abc") == "campaign-abc" and CAMPAIGN_PREFIX == "campaign-"
    assert review_stream("p-1") == "review-p-1"
    assert review_eval_stream("e1") == "revieweval-e1"
    assert inspect_stream("i1") == "inspect-i1"
    assert stream_kind(review_eval_stream("e1")) != "review"


def test_stream_kind() -> None:
    assert stream_kind("run-1234") == "run"
    assert stream_kind("campaign-a-b") == "campaign"


def test_a_run_stream_is_named_with_the_one_prefix() -> None:
    assert run_stream("c1-0") == "run-c1-0" and run_stream("c1-0").startswith(RUN_PREFIX)
    assert stream_kind(run_stream("c1-0")) == "run" and is_stream(run_stream("c1-0"))


def test_an_event_id_is_derived_from_its_stream_and_version() -> None:
    first = event_id_at("run-a", 0, AT)
    assert first == event_id_at("run-a", 0, AT) == derived_id("run-a:0", AT)
    assert first != event_id_at("run-a", 1, AT) and first != event_id_at("run-b", 0, AT)
    assert event_id_at("run-a", 0, AT + timedelta(milliseconds=1)) > first


def hand_made_names(tree: ast.AST) -> Iterator[ast.expr]:
    """String literals (plain, or an f-string's leading text) that spell a stream name."""
    inside_fstrings: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            inside_fstrings.update(id(part) for part in node.values)
            first = node.values[0] if node.values else None
            if isinstance(first, ast.Constant) and HAND_MADE.fullmatch(first.value):
                yield node
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in inside_fstrings
            and HAND_MADE.fullmatch(node.value)
        ):
            yield node


def test_the_scan_sees_names_made_by_hand() -> None:
    source = 'a = f"campaign-{c}"\nb = "review-"\nc = x.removeprefix("run-")\nd = "inspect-ai==1"'
    assert [n.lineno for n in hand_made_names(ast.parse(source))] == [1, 2, 3]


def test_no_module_makes_a_stream_name_by_hand() -> None:
    found = []
    for path in sources(PACKAGES):
        tree = ast.parse(path.read_text(), str(path))
        where = path.relative_to(ROOT)
        found += [f"{where}:{node.lineno}" for node in hand_made_names(tree)]
    assert found == [], f"stream names made by hand (use events.streams): {found}"
