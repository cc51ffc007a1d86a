"""`labrxiv tasks validate --run BUNDLE`: the starter solution and the grader run once in
the sandbox, and the grader's output is checked against the card, check by check.

Without `--run` the check stays static (a grader that crashes still reads `ok` there:
only running it can tell).
"""

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from labrxiv.cli import app
from workers.gym.registry import builtin_gym_dir

MakeCopy = Callable[..., Path]
SUBTASKS = ["final_accuracy", "average_forgetting", "average_incremental_accuracy"]


@pytest.fixture
def runner(monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    """A runner with no LABRXIV_* setting from the caller's shell and a wide terminal."""
    for name in list(os.environ):
        if name.startswith("LABRXIV_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("COLUMNS", "200")
    return CliRunner()


def said(text: str) -> str:
    return " ".join(text.split())


def with_grader(bundle_copy: MakeCopy, source: str) -> Path:
    """A copy of continual-digits named `my-task` whose grader is `source`."""
    folder = bundle_copy("my-task")
    card = folder / "task.toml"
    card.write_text(card.read_text().replace('id = "continual-digits"', 'id = "my-task"'))
    (folder / "grader" / "grade.py").write_text(source)
    return folder


def printing(scores: str) -> str:
    """A grader that prints `scores` (a Python dict expression) as its JSON object."""
    return f"import json\nprint(json.dumps({{'scores': {scores}, 'notes': ''}}))\n"


def validate(runner: CliRunner, *args: str) -> tuple[int, str]:
    result = runner.invoke(app, ["tasks", "validate", *args])
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.output


def test_a_shipped_bundle_passes_every_check(runner: CliRunner) -> None:
    code, out = validate(runner, "--run", str(builtin_gym_dir() / "continual-digits"))
    assert code == 0, out
    text = said(out)
    for check in ("solution", "grader", "output", "subtasks", "finite"):
        assert f"ok {check}" in text, out
    assert "final_accuracy=0.1944" in text
    assert "FAILED" not in text


def test_a_crashing_grader_is_ok_statically_and_fails_when_run(
    runner: CliRunner, bundle_copy: MakeCopy
) -> None:
    folder = with_grader(bundle_copy, "raise RuntimeError('the hidden labels are gone')\n")
    code, out = validate(runner, str(folder))
    assert (code, out.strip()) == (0, "ok")
    code, out = validate(runner, "--run", str(folder))
    assert code == 1, out
    text = said(out)
    assert "ok solution" in text
    assert "FAILED grader the grader crashed (exit 1)" in text
    assert "RuntimeError: the hidden labels are gone" in text
    assert "skipped output" in text and "skipped subtasks" in text


def test_a_grader_that_prints_garbage_fails_the_output_check(
    runner: CliRunner, bundle_copy: MakeCopy
) -> None:
    folder = with_grader(bundle_copy, "print('all good, trust me')\n")
    code, out = validate(runner, "--run", str(folder))
    assert code == 1, out
    text = said(out)
    assert "ok grader" in text
    assert "FAILED output the grader printed no valid scores" in text
    assert "all good, trust me" in text


def test_a_grader_that_leaves_out_a_subtask_fails_the_subtasks_check(
    runner: CliRunner, bundle_copy: MakeCopy
) -> None:
    folder = with_grader(bundle_copy, printing("{'final_accuracy': 0.5}"))
    code, out = validate(runner, "--run", str(folder))
    assert code == 1, out
    text = said(out)
    assert "ok output" in text
    assert "FAILED subtasks no score for average_forgetting, average_incremental_accuracy" in text


def test_a_score_that_is_not_finite_fails_the_finite_check(
    runner: CliRunner, bundle_copy: MakeCopy
) -> None:
    scores = "{" + ", ".join(f"'{name}': 0.5" for name in SUBTASKS[:-1])
    scores += f", '{SUBTASKS[-1]}': float('inf')}}"
    folder = with_grader(bundle_copy, printing(scores))
    code, out = validate(runner, "--run", str(folder))
    assert code == 1, out
    text = said(out)
    assert "ok subtasks" in text
    assert "FAILED finite average_incremental_accuracy=inf" in text


def test_a_starter_solution_that_fails_is_named(runner: CliRunner, bundle_copy: MakeCopy) -> None:
    folder = bundle_copy("my-task")
    card = folder / "task.toml"
    card.write_text(card.read_text().replace('id = "continual-digits"', 'id = "my-task"'))
    (folder / "workspace" / "solution.py").write_text("import sys\nsys.exit('no data here')\n")
    code, out = validate(runner, "--run", str(folder))
    assert code == 1, out
    text = said(out)
    assert "FAILED solution python solution.py exited 1" in text and "no data here" in text
    assert "skipped grader" in text


def test_a_bundle_with_static_problems_is_not_run(runner: CliRunner, bundle_copy: MakeCopy) -> None:
    folder = bundle_copy("my-task")  # its card still says id = "continual-digits"
    code, out = validate(runner, "--run", str(folder))
    assert code == 1, out
    assert "is not the folder's name" in said(out)
    assert "not run" in said(out) and "ok solution" not in said(out)
