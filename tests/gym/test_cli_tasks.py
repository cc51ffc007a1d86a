"""`labrxiv tasks list/show/validate`, run as a user runs them: exit codes and what they say."""

import json
import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from labrxiv.cli import app
from workers.gym.registry import find_bundle

MakeCopy = Callable[..., Path]


@pytest.fixture
def runner(monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    """A runner with no LABRXIV_* setting from the caller's shell and a wide terminal."""
    for name in list(os.environ):
        if name.startswith("LABRXIV_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("COLUMNS", "200")
    return CliRunner()


def said(text: str) -> str:
    """Output with whitespace collapsed, so a message wrapped by rich still matches."""
    return " ".join(text.split())


def test_list_shows_each_task_with_subtasks_and_policies(runner: CliRunner) -> None:
    result = runner.invoke(app, ["tasks", "list"])
    assert result.exit_code == 0, result.output
    line = next(line for line in result.output.splitlines() if "continual-digits" in line)
    assert "Class-incremental learning of handwritten digits" in line
    assert "final_accuracy" in line and "search, llm" in line
    assert "average_forgetting" in result.output
    assert "average_incremental_accuracy" in result.output


def test_list_marks_a_broken_bundle_from_the_gym_path(
    runner: CliRunner, bundle_copy: MakeCopy, tmp_path: Path
) -> None:
    broken = bundle_copy("broken-task")
    gym_path = json.dumps([str(tmp_path / "gym")])
    result = runner.invoke(app, ["tasks", "list"], env={"LABRXIV_GYM_PATH": gym_path})
    assert result.exit_code == 0, result.output
    assert f"invalid: labrxiv tasks validate {broken.resolve()}" in said(result.output)
    assert "continual-digits" in result.output


def test_show_finds_a_task_given_by_gym_path(
    runner: CliRunner, bundle_copy: MakeCopy, tmp_path: Path
) -> None:
    copy = bundle_copy("my-task")
    card = copy / "task.toml"
    card.write_text(card.read_text().replace('id = "continual-digits"', 'id = "my-task"'))
    result = runner.invoke(app, ["tasks", "show", "my-task", "--gym-path", str(tmp_path / "gym")])
    assert result.exit_code == 0, result.output
    assert f"folder: {copy.resolve()}" in result.output
    # The commands shown run as printed: `python` is the interpreter labrxiv runs them with
    # (a user's shell may have no `python`, or one without numpy).
    shown = said(result.output)
    assert f"reproduce: cd {copy.resolve()} && {sys.executable} baselines/reproduce.py" in shown
    assert f"grader: {sys.executable} grader/grade.py <workspace>" in shown
    assert runner.invoke(app, ["tasks", "show", "my-task"]).exit_code == 1
    # A folder a shell must have quoted is shown quoted.
    spaced = shutil.copytree(copy, tmp_path / "my tasks" / "my-task")
    result = runner.invoke(app, ["tasks", "show", "my-task", "--gym-path", str(spaced.parent)])
    assert f"reproduce: cd '{spaced.resolve()}' && " in said(result.output), result.output


def test_a_gym_path_that_is_not_a_json_list_is_a_bad_setting(runner: CliRunner) -> None:
    result = runner.invoke(app, ["tasks", "list"], env={"LABRXIV_GYM_PATH": "/data/tasks"})
    assert result.exit_code == 2
    assert "LABRXIV_GYM_PATH" in result.output


@pytest.mark.parametrize("command", [["list"], ["show", "continual-digits"]], ids=" ".join)
def test_list_and_show_reject_a_gym_path_that_is_not_a_folder(
    runner: CliRunner, tmp_path: Path, command: list[str]
) -> None:
    """The same bad --gym-path is exit 2 for both (`show` said 1, as for an unknown
    task; found running labrxiv from outside)."""
    absent = str(tmp_path / "absent")
    result = runner.invoke(app, ["tasks", *command, "--gym-path", absent])
    assert result.exit_code == 2
    assert "not a folder of task bundles" in result.output


def test_show_prints_the_card_in_full(runner: CliRunner) -> None:
    result = runner.invoke(app, ["tasks", "show", "continual-digits"])
    assert result.exit_code == 0, result.output
    out = said(result.output)
    bundle = find_bundle("continual-digits")
    assert bundle.card.title in out
    assert "policies supported: search, llm" in out
    assert "primary subtask: final_accuracy" in out
    assert f"reproduce: cd {bundle.path} && {sys.executable} baselines/reproduce.py" in out
    assert f"grader: {sys.executable} grader/grade.py <workspace> (from the folder" in out
    assert f"experiment: {sys.executable} solution.py (in a copy of workspace/)" in out
    assert "budgets per run: 20 attempts, 900 s (unless the command sets its own)" in out
    assert said(bundle.card.goal) in out
    for subtask in bundle.card.subtasks:
        assert f"{subtask.name}" in out
        assert f"baseline {subtask.baseline:g}, sota {subtask.sota:g}" in out
    assert "replay_per_class" in out and "finetune, replay, ncm" in out


def test_show_json_is_the_card(runner: CliRunner) -> None:
    result = runner.invoke(app, ["tasks", "show", "continual-digits", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == find_bundle("continual-digits").card.model_dump(mode="json")


def test_show_unknown_task(runner: CliRunner) -> None:
    result = runner.invoke(app, ["tasks", "show", "nope"])
    assert result.exit_code == 1
    assert "no task 'nope'" in result.output and "continual-digits" in result.output


def test_validate_a_good_bundle_says_ok(runner: CliRunner) -> None:
    result = runner.invoke(app, ["tasks", "validate", str(find_bundle("continual-digits").path)])
    assert result.exit_code == 0, result.output
    assert result.output.strip() == "ok"


def test_validate_a_broken_bundle_prints_every_problem(
    runner: CliRunner, bundle_copy: MakeCopy
) -> None:
    folder = bundle_copy("renamed")
    (folder / "grader" / "grade.py").unlink()
    (folder / "workspace" / "config.json").unlink()
    result = runner.invoke(app, ["tasks", "validate", str(folder)])
    assert result.exit_code == 1
    lines = result.output.splitlines()
    assert lines[0] == f"3 problem(s) in {folder}:"
    assert lines[1:] == [
        "- task.toml: id 'continual-digits' is not the folder's name 'renamed'",
        "- workspace/config.json: missing (the baseline config the solution reads)",
        "- grader/grade.py: missing (named by grader.command)",
    ]


def test_validate_a_folder_that_is_not_a_bundle(runner: CliRunner, tmp_path: Path) -> None:
    result = runner.invoke(app, ["tasks", "validate", str(tmp_path)])
    assert result.exit_code == 1
    assert "task.toml: missing" in result.output
