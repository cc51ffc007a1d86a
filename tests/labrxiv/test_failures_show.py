"""Failures are shown, not hidden: a campaign or demo whose runs all errored
exits non-zero and says why, run by run; a broken grader ends a run with `error` instead
of a paper that claims nothing; the demo checks its task as `campaign` does.

Runs as a user runs the CLI (in this process: the sandbox runs here).
"""

import json
import os
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from events import EventStore
from labrxiv.cli import app
from workers.gym.registry import builtin_gym_dir

CRASH = "raise RuntimeError('the hidden labels are gone')\n"
"""A grader that crashes whatever it is given."""


def said(text: str) -> str:
    """Output with whitespace collapsed, so a message wrapped by rich still matches."""
    return " ".join(text.split())


def invoke(*args: str, **settings: str) -> tuple[int, str]:
    """Run the CLI in this process, with no LABRXIV_* of the caller's shell."""
    env: dict[str, str | None] = {k: None for k in os.environ if k.startswith("LABRXIV_")}
    result = CliRunner().invoke(app, list(args), env={**env, "COLUMNS": "200", **settings})
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.output


@pytest.fixture
def broken_gym(tmp_path: Path) -> Path:
    """A gym folder holding `broken-grader`: continual-digits with a grader that crashes."""
    folder = shutil.copytree(
        builtin_gym_dir() / "continual-digits",
        tmp_path / "gym" / "broken-grader",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    card = folder / "task.toml"
    card.write_text(card.read_text().replace('id = "continual-digits"', 'id = "broken-grader"'))
    (folder / "grader" / "grade.py").write_text(CRASH)
    return folder.parent


def events_of(data_dir: Path) -> list[tuple[str, dict[str, object]]]:
    store = EventStore.from_url(f"sqlite:///{data_dir / 'labrxiv.db'}")
    try:
        return [(e.type, e.payload.model_dump()) for e in store.read(limit=100_000)]
    finally:
        store.engine.dispose()


def test_a_campaign_on_a_crashing_grader_ends_in_error_and_exits_1(
    tmp_path: Path, broken_gym: Path
) -> None:
    data = tmp_path / "data"
    code, out = invoke(
        "campaign", "--task", "broken-grader", "--labs", "2", "--papers", "1", "--attempts", "3",
        LABRXIV_DATA_DIR=str(data), LABRXIV_GYM_PATH=json.dumps([str(broken_gym)]),
    )  # fmt: skip
    assert code == 1, out
    text = said(out)
    assert "finished (error)" in text and "finished (done)" not in text
    # Each run's reason and detail: a grader crash, with the end of its traceback.
    assert text.count("error: the grader crashed (exit 1)") == 2, out
    assert "RuntimeError: the hidden labels are gone" in text
    assert "rejected the outputs" not in text
    assert "every run ended in error" in text
    events = events_of(data)
    finished = [p for t, p in events if t == "run.finished"]
    assert [p["reason"] for p in finished] == ["error", "error"]
    assert all("the grader crashed" in str(p["detail"]) for p in finished)
    # Stopped at the first crash: no attempts burnt on a broken grader, no empty paper.
    assert not [p for t, p in events if t == "paper.submitted"]


def test_a_campaign_that_worked_exits_0_and_names_each_runs_end(tmp_path: Path) -> None:
    code, out = invoke(
        "campaign", "--task", "continual-digits", "--labs", "1", "--papers", "1",
        "--attempts", "1", LABRXIV_DATA_DIR=str(tmp_path / "data"),
    )  # fmt: skip
    assert code == 0, out
    assert "(1 run: 1 done)" in said(out)


def test_demo_names_an_unknown_task_in_one_line_and_exits_2(tmp_path: Path) -> None:
    code, out = invoke("demo", "--task", "nope", LABRXIV_DATA_DIR=str(tmp_path / "data"))
    assert code == 2, out
    assert out.strip().count("\n") == 0, out
    assert "no task 'nope'" in out and "continual-digits" in out and "ts-saliency" in out
    assert not (tmp_path / "data").exists()


def test_demo_refuses_a_task_its_search_labs_cannot_work_on(tmp_path: Path) -> None:
    code, out = invoke("demo", "--task", "math-prompting", LABRXIV_DATA_DIR=str(tmp_path / "data"))
    assert code == 2, out
    assert out.strip().count("\n") == 0, out
    assert "math-prompting" in out and "llm" in out and "search" in out
    assert not (tmp_path / "data").exists()


def test_a_demo_whose_runs_all_errored_exits_1_and_says_why(
    tmp_path: Path, broken_gym: Path
) -> None:
    code, out = invoke(
        "demo", "--task", "broken-grader", "--labs", "1", "--papers", "1", "--attempts", "2",
        "--report", str(tmp_path / "report"),
        LABRXIV_DATA_DIR=str(tmp_path / "data"), LABRXIV_GYM_PATH=json.dumps([str(broken_gym)]),
    )  # fmt: skip
    assert code == 1, out
    text = said(out)
    assert text.count("error: the grader crashed (exit 1)") == 2, out
    assert "every run ended in error" in text
    assert not (tmp_path / "report" / "summary.md").exists()
