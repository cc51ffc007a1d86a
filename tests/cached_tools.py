"""Third-party software the tests install for themselves (agents, Inspect AI, Phoenix),
each built once into a folder of the test cache and reused by later runs.

The cache is `$LABRXIV_TEST_CACHE` (`.ci/run` sets it to the user's cache folder), else
`.cache/` under the repository (git ignores it). A folder is built by one process at a
time (a file lock beside it) and counts as built once its `.installed` marker is there.
A tool a build needs that is missing, or a build that fails or takes too long, fails the
test under CI=true and skips it elsewhere (tests/needs.py).
"""

import fcntl
import os
import shutil
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path

from tests.needs import missing

REPO = Path(__file__).resolve().parents[1]
BUILD_TIMEOUT_S = 1200


def cache_root() -> Path:
    """Where the tests keep what they install."""
    return Path(os.environ.get("LABRXIV_TEST_CACHE") or REPO / ".cache")


def built_once(
    name: str,
    what: str,
    steps: Callable[[Path], Sequence[Sequence[str]]],
    needs: Sequence[str] = (),
    timeout_s: float = BUILD_TIMEOUT_S,
) -> Path:
    """The cache folder `name`, built the first time by running `steps(folder)` (commands,
    each an argv) in order; `what` names it in errors, `needs` the programs the steps
    need on PATH."""
    folder = cache_root() / name
    done = folder / ".installed"
    if done.exists():
        return folder
    for program in needs:
        if shutil.which(program) is None:
            missing(f"{program} is not on PATH (installing {what} needs it)")
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(folder.parent / f"{folder.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if done.exists():
            return folder
        shutil.rmtree(folder, ignore_errors=True)
        for step in steps(folder):
            try:
                result = subprocess.run(
                    list(step), stdin=subprocess.DEVNULL, capture_output=True, text=True,
                    timeout=timeout_s,
                )  # fmt: skip
            except subprocess.TimeoutExpired:
                missing(f"installing {what} took over {timeout_s:.0f} s: {list(step)}")
            if result.returncode != 0:
                missing(f"installing {what} failed ({list(step)}):\n{result.stderr[-3000:]}")
        folder.mkdir(exist_ok=True)
        folder.chmod(0o755)
        done.touch()
    return folder


def pip_venv(name: str, what: str, requirement: str) -> Path:
    """A virtualenv (Python 3.11) in the cache holding `requirement`, built once."""
    python = shutil.which("python3.11")
    return built_once(
        name,
        what,
        lambda venv: [
            [python or "python3.11", "-m", "venv", str(venv)],
            [str(venv / "bin" / "pip"), "install", "--quiet", requirement],
        ],
        needs=("python3.11",),
    )
