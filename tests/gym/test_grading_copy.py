"""The grader reads a private copy of an attempt's outputs: a process still running in
the workspace (an agent's own) that swaps a file for a link to hidden data after the
check is refused, not graded on the hidden data."""

import os
from pathlib import Path

import pytest

from workers.gym.grading import copy_outputs
from workers.sandbox.base import SandboxViolation


def test_outputs_are_copied_files_and_folders_only(tmp_path: Path) -> None:
    outputs = tmp_path / "ws" / "outputs"
    (outputs / "sub").mkdir(parents=True)
    (outputs / "a.npy").write_bytes(b"\x93NUMPY data")
    (outputs / "sub" / "b.json").write_text("{}")
    os.mkfifo(outputs / "pipe")
    (tmp_path / "private").mkdir()
    copy_outputs(tmp_path / "ws", tmp_path / "private" / "outputs")
    copied = sorted(
        str(p.relative_to(tmp_path / "private")) for p in (tmp_path / "private").rglob("*")
    )
    assert copied == ["outputs", "outputs/a.npy", "outputs/sub", "outputs/sub/b.json"]
    assert (tmp_path / "private" / "outputs" / "a.npy").read_bytes() == b"\x93NUMPY data"


@pytest.mark.parametrize("where", ["outputs", "outputs/sub"])
def test_a_link_swapped_in_after_the_check_is_a_violation(tmp_path: Path, where: str) -> None:
    hidden = tmp_path / "bundle" / "hidden" / "test_labels.npz"
    hidden.parent.mkdir(parents=True)
    hidden.write_bytes(b"the answers")
    outputs = tmp_path / "ws" / "outputs"
    (outputs / "sub").mkdir(parents=True)
    (tmp_path / "ws" / where / "predictions.npy").symlink_to(hidden)
    (tmp_path / "private").mkdir()
    with pytest.raises(SandboxViolation) as refused:
        copy_outputs(tmp_path / "ws", tmp_path / "private" / "outputs")
    assert refused.value.kind == "symlink_escape"
    assert "is a link" in refused.value.detail
    found = [p.read_bytes() for p in (tmp_path / "private").rglob("*.npy")]
    assert b"the answers" not in found


def test_outputs_swapped_for_a_link_is_a_violation(tmp_path: Path) -> None:
    elsewhere = tmp_path / "other-run" / "outputs"
    elsewhere.mkdir(parents=True)
    (elsewhere / "predictions.npy").write_bytes(b"another run's")
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "outputs").symlink_to(elsewhere)
    (tmp_path / "private").mkdir()
    with pytest.raises(SandboxViolation):
        copy_outputs(tmp_path / "ws", tmp_path / "private" / "outputs")
