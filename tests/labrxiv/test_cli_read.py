"""`labrxiv papers`, `ledger` and `curves` as a user runs them, on a small hand-made log."""

import json
import os
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import update
from typer.testing import CliRunner

from events import Event, EventStore
from events.ids import derived_id
from events.payloads import (
    Claim,
    ExperimentScored,
    PapersRetrieved,
    PaperSubmitted,
    Payload,
    RunStarted,
    ToolInvoked,
    ToolReturned,
)
from labrxiv.cli import app
from projections.archive import PAPER_CLAIMS
from workers.lab.archive_log import LogArchive

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
PNG = b"\x89PNG\r\n\x1a\n"
CURVES = {
    "best_vs_time.png",
    "best_vs_attempts.png",
    "best_vs_tokens.png",
    "best_vs_cost.png",
    "best_per_paper.png",
}


def said(text: str) -> str:
    """Output with whitespace collapsed, so a message wrapped by rich still matches."""
    return " ".join(text.split())


def has_row(out: str, *cells: object) -> bool:
    """Whether a table line holds `cells` in order, whatever the box characters."""
    pattern = r"\W+".join(re.escape(str(cell)) for cell in cells)
    return re.search(rf"(?m)^\W*{pattern}\W", out) is not None


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty directory to run in, with no LABRXIV_* setting from the caller's shell."""
    for name in list(os.environ):
        if name.startswith("LABRXIV_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def invoke(*args: str) -> tuple[int, str]:
    """Run the CLI in this process; returns the exit code and everything it printed."""
    result = CliRunner().invoke(app, list(args))
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.output


def run_events(run: str, lab: str, payloads: list[tuple[float, Payload]]) -> list[Event]:
    stream = f"run-{run}"
    return [
        Event(
            id=derived_id(f"{stream}:{version}", T0 + timedelta(seconds=seconds)),
            stream=stream,
            version=version,
            occurred_at=T0 + timedelta(seconds=seconds),
            correlation_id="camp1",
            actor="grader:digits" if payload.type == "experiment.scored" else lab,
            payload=payload,
        )
        for version, (seconds, payload) in enumerate(payloads)
    ]


@pytest.fixture
def read_log(workdir: Path) -> EventStore:
    """Two labs of campaign camp1: x scores and publishes, y reads x's paper and cites it."""
    store = EventStore.from_url(f"sqlite:///{workdir / '.labrxiv' / 'labrxiv.db'}")
    x = run_events(
        "x",
        "lab-x",
        [
            (0, RunStarted(task="digits", lab="lab-x", policy="handmade")),
            (1, ToolInvoked(call_id="c1", tool="evaluate")),
            (3.5, ToolReturned(call_id="c1", tool="evaluate", exit_code=0, duration_s=2.5)),
            (
                4,
                ExperimentScored(
                    attempt=1, subtask_scores={"acc": 0.6}, score=0.6, normalized_score=0.75
                ),
            ),
            (
                5,
                PaperSubmitted(
                    paper_id="p-one",
                    task="digits",
                    title="Replay with herding",
                    abstract="Herding picks exemplars.",
                    body="## Method\nreplay",
                    claims=[
                        Claim(subtask="acc", metric="accuracy", value=0.6, attempt=1),
                        Claim(subtask="acc", metric="accuracy", value=0.9, attempt=1),
                    ],
                ),
            ),
        ],
    )
    y = run_events(
        "y",
        "lab-y",
        [
            (0, RunStarted(task="digits", lab="lab-y", policy="handmade")),
            (6, PapersRetrieved(query="replay", paper_ids=["p-one"])),
            (
                7,
                PaperSubmitted(
                    paper_id="p-two",
                    task="digits",
                    title="Fine-tuning again",
                    abstract="No memory.",
                    body="plain",
                    cited=["p-one"],
                ),
            ),
        ],
    )
    store.append(sorted(x + y, key=lambda e: e.occurred_at))
    code, out = invoke("projector", "--once")
    assert code == 0 and "applied" in out, out
    return store


def test_papers_list(read_log: EventStore) -> None:
    code, out = invoke("papers", "list")
    assert code == 0, out
    assert has_row(out, "p-one", "digits", "camp1", "lab-x", 1)
    assert has_row(out, "p-two", "digits", "camp1", "lab-y", 1)
    assert "acc=0.6000" in out
    code, out = invoke("papers", "list", "--task", "other")  # an empty filter is told
    assert code == 1 and "no paper on task other in the archive" in said(out)
    code, out = invoke("papers", "list", "--campaign", "camp1")
    assert "p-one" in out and "p-two" in out


def test_papers_show_with_citations_and_readers(read_log: EventStore) -> None:
    code, out = invoke("papers", "show", "p-one")
    assert code == 0, out
    text = said(out)
    assert "Replay with herding" in text and "Herding picks exemplars." in text
    assert has_row(out, "acc", "accuracy", "0.6000", 1, "yes")
    assert has_row(out, "acc", "accuracy", "0.9000", 1, "NO"), "an inflated claim is flagged"
    assert has_row(out, "cited by", "p-two", "lab-y", "Fine-tuning again")
    assert has_row(out, "2026-03-01 09:00:06", "run-y", "lab-y", 1, "replay")
    code, out = invoke("papers", "show", "p-two")
    # The cited paper's lab, as for the papers citing it (the column was left empty).
    assert has_row(out, "cites", "p-one", "lab-x", "Replay with herding")
    code, out = invoke("papers", "show", "p-two", "--json")
    (cited,) = json.loads(out)["cited"]
    assert (cited["paper_id"], cited["lab"]) == ("p-one", "lab-x")
    code, out = invoke("papers", "show", "p-nope")
    assert code == 1 and "no paper p-nope" in said(out)


def test_papers_search_and_top(read_log: EventStore) -> None:
    code, out = invoke("papers", "search", "herding exemplars", "-k", "5")
    assert code == 0, out
    assert has_row(out, 1) and "p-one" in out and "p-two" not in out
    code, out = invoke("papers", "search", "memory", "--task", "digits")
    assert "p-two" in out and "p-one" not in out
    code, out = invoke("papers", "search", "quantum")  # nothing found is exit 1, as in grep
    assert code == 1 and "no paper matches 'quantum'" in said(out)
    code, out = invoke("papers", "top", "digits", "--subtask", "acc")
    # `top` ranks by claimed values, the unverified 0.9 included, and flags it.
    assert code == 0 and has_row(out, 1, "p-one", "lab-x", "camp1", "acc", "0.9000", "NO")
    code, out = invoke("papers", "top", "digits", "--subtask", "acc", "--verified-only")
    # p-one ranks by the 0.6 its author's graded attempt 1 measured.
    assert code == 0 and has_row(out, 1, "p-one", "lab-x", "camp1", "acc", "0.6000", "yes")
    assert "0.9000" not in out


def test_ledger_roll_ups(read_log: EventStore) -> None:
    code, out = invoke("ledger", "--by", "lab")
    assert code == 0, out
    assert has_row(out, "camp1", "lab-x", 1, 1, 0, 0, "2.5")  # a lab is a campaign's lab
    code, out = invoke("ledger", "--by", "campaign")
    assert has_row(out, "camp1", 1, 1, 0, 0, "2.5")
    code, out = invoke("ledger")
    assert has_row(out, "run-x", 1, 1, 0, 0, "2.5")
    code, out = invoke("ledger", "--by", "model")
    assert code == 2


def test_curves_write_every_png(read_log: EventStore, workdir: Path) -> None:
    code, out = invoke("curves", "--out", "plots", "--campaign", "camp1")
    assert code == 0, out
    assert "1 scored attempts, 2 papers" in said(out)
    written = {p.name for p in (workdir / "plots").iterdir()}
    assert written == CURVES
    for name in CURVES:
        assert (workdir / "plots" / name).read_bytes().startswith(PNG), name
    code, out = invoke("curves", "--out", "by-campaign", "--by", "campaign")
    assert code == 0 and {p.name for p in (workdir / "by-campaign").iterdir()} == CURVES


def test_read_commands_on_an_empty_log(workdir: Path) -> None:
    """Before any projector ran: nothing to show, said, and still every plot (with a note)."""
    EventStore.from_url(f"sqlite:///{workdir / '.labrxiv' / 'labrxiv.db'}")
    code, out = invoke("papers", "list")
    assert code == 0 and "no paper in the archive yet" in out
    code, out = invoke("ledger")
    assert code == 0 and "no tool or model call in the log yet" in said(out)
    code, out = invoke("curves", "--out", "empty")
    assert code == 0 and "0 scored attempts, 0 papers" in said(out)
    assert {p.name for p in (workdir / "empty").iterdir()} == CURVES


def test_top_ranks_by_the_direction_the_log_recorded(workdir: Path) -> None:
    """No card for task `faraway` here: the papers' claims recorded that `error` is
    minimized, so the lowest error ranks first, with no note about a missing card."""
    store = EventStore.from_url(f"sqlite:///{workdir / '.labrxiv' / 'labrxiv.db'}")
    events = []
    # (run, error measured, error claimed): d claims its error as a percentage, e overclaims
    for run, error, claimed in (
        ("a", 0.3, 0.3), ("b", 0.1, 0.1), ("c", 0.2, 0.2), ("d", 0.05123, 5.1), ("e", 0.4, 0.01)
    ):  # fmt: skip
        scored = ExperimentScored(
            attempt=1,
            subtask_scores={"error": error},
            score=error,
            directions={"error": "minimize"},
        )
        claim = Claim(
            subtask="error", metric="error", value=claimed, attempt=1, direction="minimize"
        )
        paper = PaperSubmitted(
            paper_id=f"p-{run}", task="faraway", title=run, abstract="", body="", claims=[claim]
        )
        events += run_events(
            run,
            f"lab-{run}",
            [(0, RunStarted(task="faraway", lab=f"lab-{run}", policy="handmade")),
             (1, ToolInvoked(call_id="c1", tool="evaluate")), (1, scored), (2, paper)],
        )  # fmt: skip
    store.append(sorted(events, key=lambda e: e.occurred_at))
    assert invoke("projector", "--once")[0] == 0
    code, out = invoke("papers", "top", "faraway", "--json")
    assert code == 0, out
    shown = json.loads(out)
    assert shown["direction"] == "minimize"
    ranked = [p["paper"]["paper_id"] for p in shown["papers"]]
    # the overclaim first, as claimed; the percentage as the fraction it states
    assert ranked == ["p-e", "p-d", "p-b", "p-c", "p-a"]
    assert [p["verified"] for p in shown["papers"]] == [False, True, True, True, True]
    assert shown["papers"][1]["value"] == 0.05123
    code, out = invoke("papers", "top", "faraway")
    assert code == 0 and "higher ranked better" not in out
    assert has_row(out, 1, "p-e", "lab-e") and has_row(out, 2, "p-d", "lab-d")
    code, out = invoke("papers", "top", "faraway", "--verified-only", "--json")
    verified = json.loads(out)["papers"]
    assert [p["paper"]["paper_id"] for p in verified] == ["p-d", "p-b", "p-c", "p-a"]
    assert verified[0]["value"] == 0.05123  # the grader's value the 5.1% states


def test_papers_marks_come_from_the_read_model_and_equal_the_labs(read_log: EventStore) -> None:
    """`papers list/show/top` show the archive read model's `verified` marks, which are
    those the labs' lag-free archive gives for the same log; a mark changed in the read
    model (as a later fold of the log would) is what they show next."""
    labs = LogArchive(read_log).get("p-one")
    assert labs is not None
    from_log = [c["verified"] for c in labs["claims"]]
    assert from_log == [True, False]
    code, out = invoke("papers", "show", "p-one", "--json")
    assert code == 0 and json.loads(out)["verified"] == from_log
    code, out = invoke("papers", "list", "--json")
    assert {p["paper_id"]: p["verified"] for p in json.loads(out)} == {
        "p-one": from_log,
        "p-two": [],
    }
    code, out = invoke("papers", "list")
    cells = ("p-one", "digits", "camp1", "lab-x", 1, "2026-03-01 09:00:05", "acc=0.6000", "yes")
    assert has_row(out, *cells)
    with read_log.engine.begin() as conn:
        conn.execute(
            update(PAPER_CLAIMS)
            .where(PAPER_CLAIMS.c.paper_id == "p-one", PAPER_CLAIMS.c.claim_index == 1)
            .values(verified=True, measured=0.9)
        )
    code, out = invoke("papers", "show", "p-one", "--json")
    assert json.loads(out)["verified"] == [True, True]
    code, out = invoke("papers", "top", "digits", "--subtask", "acc", "--json")
    assert [p["verified"] for p in json.loads(out)["papers"]] == [True]
