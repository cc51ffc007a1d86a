"""Confining paths to a workspace: no absolute paths, no `..`, no symlink escape."""

import os
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

from workers.sandbox.base import SandboxViolation


def confine(root: Path, relative: str, protected: Sequence[Path] = ()) -> Path:
    """The real path of `relative` inside `root`, or a `SandboxViolation` saying why not.

    `protected` paths (a task's grader and hidden data) are refused even when they
    would be reachable, e.g. through a symlink a lab created.
    """
    if not relative or "\x00" in relative:
        raise SandboxViolation("path_traversal", "an empty path or a NUL byte", relative)
    pure = PurePosixPath(relative)
    if pure.is_absolute():
        raise SandboxViolation(
            "absolute_path", f"{relative}: paths are relative to the workspace", relative
        )
    if ".." in pure.parts:
        raise SandboxViolation(
            "path_traversal", f"{relative}: '..' may not leave the workspace", relative
        )
    real_root = Path(os.path.realpath(root))
    real = Path(os.path.realpath(real_root / pure))
    for guarded in protected:
        guarded_real = Path(os.path.realpath(guarded))
        if guarded_real == real_root or guarded_real in real_root.parents:
            continue  # a folder that holds the workspace is covered for processes only
        if real == guarded_real or guarded_real in real.parents:
            raise SandboxViolation(
                "protected_path", f"{relative}: the grader and hidden data are off limits", relative
            )
    if real != real_root and real_root not in real.parents:
        raise SandboxViolation(
            "symlink_escape", f"{relative}: resolves outside the workspace (to {real})", relative
        )
    return real
