"""A grader that fails is told apart from one that rejects the outputs.

The grader protocol (docs/tasks.md): exit 0 with one JSON object of scores, or exit
non-zero with one line on stderr saying which output is wrong. Anything else — a
traceback, a signal, a timeout, garbage on stdout, a subtask missing, a number that is
not finite — is a broken grader: a bug of the bundle that no lab can fix.
"""

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from workers.gym.bundle import load_bundle
from workers.gym.grading import GraderBroken, GradingFailed, run_grader

MakeCopy = Callable[..., Path]


def with_grader(bundle_copy: MakeCopy, source: str, timeout: float = 60) -> Path:
    """A copy of the template bundle whose grader is `source`."""
    folder = bundle_copy("broken-grader")
    card = folder / "task.toml"
    text = card.read_text().replace('id = "continual-digits"', 'id = "broken-grader"')
    card.write_text(text.replace("timeout_seconds = 60", f"timeout_seconds = {timeout}"))
    (folder / "grader" / "grade.py").write_text(source)
    return folder


def grade_empty_workspace(folder: Path, tmp_path: Path) -> object:
    bundle = load_bundle(folder)
    workspace = tmp_path / "ws"
    (workspace / "outputs").mkdir(parents=True)
    return run_grader(bundle.card, bundle.path, workspace)


def test_a_grader_that_raises_is_a_crash_with_its_stderr_tail(
    bundle_copy: MakeCopy, tmp_path: Path
) -> None:
    folder = with_grader(bundle_copy, "raise RuntimeError('the hidden labels are gone')\n")
    with pytest.raises(GraderBroken) as caught:
        grade_empty_workspace(folder, tmp_path)
    message = str(caught.value)
    assert message.startswith("the grader crashed (exit 1)")
    assert "RuntimeError: the hidden labels are gone" in message
    assert "rejected" not in message


def test_a_grader_that_prints_garbage_is_broken(bundle_copy: MakeCopy, tmp_path: Path) -> None:
    folder = with_grader(bundle_copy, "print('all good, trust me')\n")
    with pytest.raises(GraderBroken, match="printed no valid scores"):
        grade_empty_workspace(folder, tmp_path)


def test_a_grader_that_leaves_out_a_subtask_is_broken(
    bundle_copy: MakeCopy, tmp_path: Path
) -> None:
    source = "import json\nprint(json.dumps({'scores': {'final_accuracy': 0.5}}))\n"
    folder = with_grader(bundle_copy, source)
    with pytest.raises(GraderBroken, match="average_forgetting, average_incremental_accuracy"):
        grade_empty_workspace(folder, tmp_path)


def test_a_grader_that_gives_a_number_that_is_not_finite_is_broken(
    bundle_copy: MakeCopy, tmp_path: Path
) -> None:
    names = ["final_accuracy", "average_forgetting", "average_incremental_accuracy"]
    scores = ", ".join(f"'{name}': float('nan')" for name in names)
    source = f"import json\nprint(json.dumps({{'scores': {{{scores}}}}}))\n"
    folder = with_grader(bundle_copy, source)
    with pytest.raises(GraderBroken, match="not a finite number"):
        grade_empty_workspace(folder, tmp_path)


def test_a_grader_that_exits_without_a_word_is_broken(
    bundle_copy: MakeCopy, tmp_path: Path
) -> None:
    folder = with_grader(bundle_copy, "import sys\nsys.exit(3)\n")
    with pytest.raises(GraderBroken, match="exited 3 and said nothing"):
        grade_empty_workspace(folder, tmp_path)


def test_a_grader_killed_by_its_timeout_is_broken(bundle_copy: MakeCopy, tmp_path: Path) -> None:
    # Blocks on its stdin, which is closed: no sleeping, the timeout is what ends it.
    source = "import os, signal\nsignal.pause()\n"
    folder = with_grader(bundle_copy, source, timeout=0.5)
    with pytest.raises(GraderBroken, match="took longer than 0.5s"):
        grade_empty_workspace(folder, tmp_path)


def test_a_grader_that_rejects_missing_outputs_is_a_rejection(tmp_path: Path) -> None:
    from workers.gym.registry import builtin_gym_dir

    folder = builtin_gym_dir() / "continual-digits"
    with pytest.raises(GradingFailed) as caught:
        grade_empty_workspace(folder, tmp_path)
    assert not isinstance(caught.value, GraderBroken)
    message = str(caught.value)
    assert message.startswith("the grader rejected the outputs (exit 2)")
    assert "predictions_after_task_1.npy" in message


def test_the_grader_runs_in_a_session_of_its_own(bundle_copy: MakeCopy, tmp_path: Path) -> None:
    """A Ctrl-C in the terminal goes to the whole foreground process group: a grader in
    the worker's own group died of it, and the step recorded the task's grader as broken
    (`run.finished` error) while the command was only being stopped."""
    source = "import os, sys\nprint(f'session {os.getsid(0)}', file=sys.stderr)\nsys.exit(1)\n"
    folder = with_grader(bundle_copy, source)
    with pytest.raises(GradingFailed) as failed:
        grade_empty_workspace(folder, tmp_path)
    session = int(str(failed.value).rsplit("session ", 1)[1].split()[0])
    assert session != os.getsid(0)
