"""Grading an attempt: run the lab's solution jailed, then the trusted grader outside the jail.

Two ways an attempt goes unscored are told apart. The solution failing, or the grader
rejecting its outputs (exit non-zero, one line on stderr, as docs/tasks.md asks), is the
lab's to fix: `GradingFailed`, and the run goes on. The grader itself failing (a
traceback, a signal, a timeout, garbage on stdout, a subtask missing, a number that is not
finite) is a bug of the bundle no lab can fix: `GraderBroken`, and the run ends with
`error` (worded as "rejected the outputs", runs would go on to publish papers with no
numbers and end `done`).
"""

import hashlib
import json
import math
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from workers.gym.card import TaskCard
from workers.sandbox.base import ExecResult, Limits, Sandbox, SandboxViolation
from workers.sandbox.beneath import FOLDER_FLAGS, open_beneath


class GradingFailed(Exception):
    """The solution failed or the grader rejected its outputs; the message says which and why."""


class GraderBroken(Exception):
    """The trusted grader failed (crashed, timed out, printed no valid scores): a bug of
    the bundle, not of the lab. Not a `GradingFailed`: the `evaluate` tool lets it through,
    and the lab step ends the run with `error` (`workers/lab/step.py`)."""


@dataclass(frozen=True)
class Grade:
    """What the grader reported for one attempt."""

    scores: dict[str, float]
    notes: str
    solution: ExecResult
    usage: dict[str, int] | None = None
    """Model usage the grader reported (calls, input and output tokens), if it used one."""
    model: str | None = None
    """The model the grader called, if it said."""


def protected_digests(bundle: Path) -> dict[str, str]:
    """sha256 of every file of the bundle's grader/ and hidden/, by relative path."""
    digests = {}
    for folder in ("grader", "hidden"):
        for path in sorted((bundle / folder).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                digests[str(path.relative_to(bundle))] = hashlib.sha256(
                    path.read_bytes()
                ).hexdigest()
    return digests


def grade(sandbox: Sandbox, card: TaskCard, bundle: Path, limits: Limits | None = None) -> Grade:
    """Run the solution in the sandbox (fresh outputs/), then the grader on its outputs."""
    result = sandbox.exec(["sh", "-c", "rm -rf outputs && mkdir -p outputs"])
    if result.exit_code != 0:
        raise GradingFailed(f"could not reset outputs/: {result.stderr.strip()}")
    solution = sandbox.exec(["python", card.entrypoint], limits)
    if solution.exit_code != 0:
        reason = f"{card.entrypoint} exited {solution.exit_code}"
        if solution.limit:
            reason += f" ({solution.limit} limit)"
        raise GradingFailed(f"{reason}:\n{solution.stderr[-2000:]}")
    # The grader runs as root outside the jail and follows links: it may only read
    # outputs that stay inside the workspace (a solution that links `outputs` to another
    # run's would be graded on them). A link out is refused as a violation. It reads a
    # private copy: a process still running in the workspace (an agent's) could swap a
    # file for a link between that check and the grader's read.
    sandbox.confine_tree("outputs")
    with tempfile.TemporaryDirectory(prefix="labrxiv-grading-") as private:
        copy_outputs(sandbox.root, Path(private) / "outputs")
        out = run_grader(card, bundle, Path(private))
    return Grade(out.scores, out.notes, solution, out.usage, out.model)


def copy_outputs(root: Path, target: Path) -> None:
    """Copy the workspace `root`'s outputs/ to `target`: folders and regular files only,
    each opened from its folder's descriptor without following a link
    (`workers.sandbox.beneath`), so a process still running in the workspace cannot swap
    a link in on the way; a link found is refused as a violation, other kinds of file
    (a FIFO, a socket) are left out, and no outputs/ is an empty copy."""
    try:
        folder = open_beneath(root, "outputs", FOLDER_FLAGS)
    except FileNotFoundError:
        target.mkdir(mode=0o700)
        return
    except OSError as exc:
        raise SandboxViolation(
            "symlink_escape",
            f"outputs is not a folder of the workspace ({exc.strerror})",
            "outputs",
        ) from None
    try:
        _copy_folder(folder, target, "outputs")
    finally:
        os.close(folder)


def _copy_folder(folder: int, target: Path, shown: str) -> None:
    target.mkdir(mode=0o700)
    for entry in sorted(os.scandir(folder), key=lambda e: e.name):
        where = f"{shown}/{entry.name}"
        if entry.is_symlink():
            raise SandboxViolation(
                "symlink_escape", f"{where} is a link (made while the attempt was graded)", where
            )
        if entry.is_dir(follow_symlinks=False):
            try:
                inner = os.open(entry.name, FOLDER_FLAGS, dir_fd=folder)
            except OSError:  # swapped or removed meanwhile: not graded
                continue
            try:
                _copy_folder(inner, target / entry.name, where)
            finally:
                os.close(inner)
        elif entry.is_file(follow_symlinks=False):
            flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
            try:
                fd = os.open(entry.name, flags, dir_fd=folder)
            except OSError:
                continue
            with os.fdopen(fd, "rb") as handle:
                if stat.S_ISREG(os.fstat(fd).st_mode):
                    with open(target / entry.name, "wb") as copy:
                        shutil.copyfileobj(handle, copy)


def grader_env(card: TaskCard) -> dict[str, str]:
    """The grader's whole environment: a minimal base and the variables its card names."""
    env = {key: os.environ[key] for key in ("PATH", "LANG", "HOME") if key in os.environ}
    env.update({key: os.environ[key] for key in card.grader.env if key in os.environ})
    return env


@dataclass(frozen=True)
class GraderOutput:
    """What a grader that kept the protocol printed."""

    scores: dict[str, float]
    notes: str
    usage: dict[str, int] | None
    model: str | None


STDERR_TAIL = 2000
"""Characters of a failing grader's stderr kept in the message (the end: a traceback's
last lines name the error)."""


def run_grader(card: TaskCard, bundle: Path, workspace: Path) -> GraderOutput:
    """Run the trusted grader on `workspace` (from the bundle folder, outside any jail).

    Raises `GradingFailed` when it rejects the outputs, `GraderBroken` when it fails."""
    proc = grader_process(card, bundle, workspace)
    if proc.returncode != 0:
        raise refusal(proc.returncode, proc.stderr)
    return parse_output(card, proc.stdout)


def grader_process(
    card: TaskCard, bundle: Path, workspace: Path
) -> subprocess.CompletedProcess[str]:
    """The grader's run as it ended; raises `GraderBroken` when it outlived its timeout."""
    command = list(card.grader.command)
    if command[0] == "python":
        command[0] = sys.executable
    try:
        return subprocess.run(
            [*command, str(workspace)],
            cwd=bundle,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=card.grader.timeout_seconds,
            env=grader_env(card),
            check=False,
            # Not in the worker's process group: a Ctrl-C at the terminal stops labrxiv
            # (which lets the step end), not the grader under it.
            start_new_session=True,
        )
    except subprocess.TimeoutExpired:
        timeout = card.grader.timeout_seconds
        raise GraderBroken(f"the grader took longer than {timeout:g}s and was killed") from None


def refusal(exit_code: int, stderr: str) -> GradingFailed | GraderBroken:
    """What a grader's non-zero exit means: a rejection of the outputs when it said why in
    plain words, a crash when it died of a signal, with a traceback, or without a word."""
    said = stderr.strip()
    tail = said[-STDERR_TAIL:]
    if exit_code < 0:
        return GraderBroken(f"the grader crashed (killed by signal {-exit_code}): {tail}")
    if "Traceback (most recent call last)" in said:
        return GraderBroken(f"the grader crashed (exit {exit_code}): {tail}")
    if not said:
        return GraderBroken(f"the grader exited {exit_code} and said nothing on stderr")
    return GradingFailed(f"the grader rejected the outputs (exit {exit_code}): {tail}")


def read_scores(stdout: str) -> tuple[dict[str, object], dict[str, float]]:
    """The grader's JSON object and its scores as floats; raises `GraderBroken` for
    anything else on stdout."""
    try:
        body = json.loads(stdout)
        scores = {str(k): float(v) for k, v in body["scores"].items()}
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        shown = stdout.strip()[:200]
        raise GraderBroken(f"the grader printed no valid scores ({exc}): {shown!r}") from None
    return body, scores


def missing_subtasks(card: TaskCard, scores: dict[str, float]) -> list[str]:
    """The card's subtasks the grader gave no score for."""
    return [s.name for s in card.subtasks if s.name not in scores]


def not_finite(scores: dict[str, float]) -> list[str]:
    """`name=value` of every score that is NaN or infinite."""
    return [f"{name}={value}" for name, value in scores.items() if not math.isfinite(value)]


def parse_output(card: TaskCard, stdout: str) -> GraderOutput:
    """The grader's JSON object, checked against the card: raises `GraderBroken` for
    anything but a finite score for every subtask."""
    body, scores = read_scores(stdout)
    if missing := missing_subtasks(card, scores):
        raise GraderBroken(f"the grader gave no score for {', '.join(missing)}")
    if odd := not_finite(scores):
        raise GraderBroken(f"the grader gave a score that is not a finite number: {', '.join(odd)}")
    usage = body.get("usage")
    if isinstance(usage, dict):
        usage = {str(k): int(v) for k, v in usage.items() if isinstance(v, int | float)}
    else:
        usage = None
    model = body.get("model")
    return GraderOutput(
        scores, str(body.get("notes", "")), usage, model if isinstance(model, str) else None
    )
