"""A bundle's trial run: its starter solution and its grader once, as `evaluate` runs them,
with the grader's output checked against the card check by check.

`labrxiv tasks validate` alone reads the folder; a grader that crashes, or prints what no
one can score, passes that and is only found when a campaign's every run
fails. The trial finds it first and says which check failed and why.
"""

import shutil
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from workers.gym.bundle import Bundle
from workers.gym.grading import (
    STDERR_TAIL,
    GraderBroken,
    grader_process,
    missing_subtasks,
    not_finite,
    read_scores,
    refusal,
)
from workers.gym.layout import OUTPUTS
from workers.sandbox.backends import AUTO, new_sandbox
from workers.sandbox.base import Sandbox, SandboxViolation

Status = Literal["ok", "FAILED", "skipped", "note"]

BASELINE_TOLERANCE = 0.01
"""How far the starter's score may be from the card's baseline before a note says so (as
`tests/gym/test_bundles.py` allows: BLAS sums differ a little between machines)."""

CHECKS = ("solution", "grader", "output", "subtasks", "finite")
"""The checks of a trial, in order; each needs the ones before it to pass."""


@dataclass(frozen=True)
class Check:
    """One check of a trial and what it found."""

    name: str
    status: Status
    detail: str = ""


def trial(bundle: Bundle, hidden: Sequence[Path] = (), sandbox: str = AUTO) -> list[Check]:
    """Run the starter solution jailed in a fresh copy of the workspace, then the grader
    on it; `hidden`: further folders the solution must not see; `sandbox`: the backend
    (`LABRXIV_SANDBOX`), which must work here (`workers.sandbox.backends.choose`)."""
    scratch = Path(tempfile.mkdtemp(prefix=f"labrxiv-trial-{bundle.id}-"))
    try:
        root = scratch / "workspace"
        shutil.copytree(bundle.workspace_dir, root, ignore=shutil.ignore_patterns("__pycache__"))
        box = new_sandbox(sandbox, root, hidden=[bundle.path, *hidden])
        box.prepare()
        return _checks(bundle, box)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def failed(checks: Sequence[Check]) -> bool:
    """Whether any check failed."""
    return any(check.status == "FAILED" for check in checks)


def _checks(bundle: Bundle, sandbox: Sandbox) -> list[Check]:
    card = bundle.card
    done: list[Check] = []

    def stop(name: str, detail: str) -> list[Check]:
        skipped = [Check(later, "skipped") for later in CHECKS[CHECKS.index(name) + 1 :]]
        return [*done, Check(name, "FAILED", detail), *skipped]

    run = sandbox.exec(["python", card.entrypoint])
    command = f"python {card.entrypoint}"
    if run.exit_code != 0:
        limit = f" ({run.limit} limit)" if run.limit else ""
        tail = run.stderr.strip()[-STDERR_TAIL:]
        return stop("solution", f"{command} exited {run.exit_code}{limit}: {tail}")
    try:
        sandbox.confine_tree(OUTPUTS)
    except SandboxViolation as exc:
        return stop("solution", f"{command} left {OUTPUTS}/ leading outside: {exc.detail}")
    done.append(Check("solution", "ok", f"{command} exited 0 in {run.duration_s:.1f}s"))
    started = time.monotonic()
    try:
        proc = grader_process(card, bundle.path, sandbox.root)
    except GraderBroken as exc:
        return stop("grader", str(exc))
    if proc.returncode != 0:
        # A rejection fails too: the starter's outputs are the card's baseline, and a
        # grader that cannot score them here (no model endpoint, say) scores no lab's.
        return stop("grader", str(refusal(proc.returncode, proc.stderr)))
    done.append(Check("grader", "ok", f"exited 0 in {time.monotonic() - started:.1f}s"))
    try:
        _body, scores = read_scores(proc.stdout)
    except GraderBroken as exc:
        return stop("output", str(exc))
    done.append(Check("output", "ok", "one JSON object with scores"))
    if missing := missing_subtasks(card, scores):
        return stop("subtasks", f"no score for {', '.join(missing)}")
    names = [s.name for s in card.subtasks]
    done.append(Check("subtasks", "ok", f"a score for every subtask: {', '.join(names)}"))
    if odd := not_finite(scores):
        return stop("finite", ", ".join(odd))
    shown = ", ".join(f"{name}={scores[name]:.4g}" for name in names)
    done.append(Check("finite", "ok", shown))
    return done + _baseline_notes(bundle, scores)


def _baseline_notes(bundle: Bundle, scores: dict[str, float]) -> list[Check]:
    """The starter is the card's baseline: a score far from it is worth a look (a note,
    not a failure: a grader that calls a model varies from run to run)."""
    return [
        Check(
            "baseline",
            "note",
            f"{s.name}: the starter scored {scores[s.name]:.4g}, the card says {s.baseline:g}"
            " (re-run the reproduce command and update the card?)",
        )
        for s in bundle.card.subtasks
        if abs(scores[s.name] - s.baseline) > BASELINE_TOLERANCE
    ]
