"""Grading an attempt: run the lab's solution jailed, then the trusted grader outside the jail."""

import hashlib
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from workers.gym.card import TaskCard
from workers.sandbox.base import ExecResult, Limits
from workers.sandbox.local import LocalSandbox


class GradingFailed(Exception):
    """The solution or the grader did not produce scores; the message says which and why."""


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


def grade(
    sandbox: LocalSandbox, card: TaskCard, bundle: Path, limits: Limits | None = None
) -> Grade:
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
    # outputs that stay inside the workspace (issue 12: a solution linked `outputs` to
    # another run's and was graded on them). A link out is refused as a violation.
    sandbox.confine_tree("outputs")
    scores, notes, usage, model = _run_grader(card, bundle, sandbox.root)
    return Grade(scores, notes, solution, usage, model)


def grader_env(card: TaskCard) -> dict[str, str]:
    """The grader's whole environment: a minimal base and the variables its card names."""
    env = {key: os.environ[key] for key in ("PATH", "LANG", "HOME") if key in os.environ}
    env.update({key: os.environ[key] for key in card.grader.env if key in os.environ})
    return env


def _run_grader(
    card: TaskCard, bundle: Path, workspace: Path
) -> tuple[dict[str, float], str, dict[str, int] | None, str | None]:
    command = list(card.grader.command)
    if command[0] == "python":
        command[0] = sys.executable
    try:
        proc = subprocess.run(
            [*command, str(workspace)],
            cwd=bundle,
            capture_output=True,
            text=True,
            timeout=card.grader.timeout_seconds,
            env=grader_env(card),
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise GradingFailed(f"the grader took longer than {card.grader.timeout_seconds}s") from None
    if proc.returncode != 0:
        raise GradingFailed(f"the grader rejected the outputs: {proc.stderr.strip()[-2000:]}")
    try:
        body = json.loads(proc.stdout)
        scores = {str(k): float(v) for k, v in body["scores"].items()}
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise GradingFailed(f"the grader printed no valid scores ({exc})") from None
    missing = [s.name for s in card.subtasks if s.name not in scores]
    if missing:
        raise GradingFailed(f"the grader gave no score for {', '.join(missing)}")
    usage = body.get("usage")
    if isinstance(usage, dict):
        usage = {str(k): int(v) for k, v in usage.items() if isinstance(v, int | float)}
    else:
        usage = None
    model = body.get("model")
    return scores, str(body.get("notes", "")), usage, model if isinstance(model, str) else None
