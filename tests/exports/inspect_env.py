"""Inspect AI for tests: a virtualenv holding `inspect-ai` at `VERSION`, built once into
a cache folder, so a test can read an exported `.eval` with Inspect AI's own reader.
Inspect AI is no dependency of labrxiv; only these tests install it.

The cache is `$LABRXIV_TEST_CACHE/inspect-ai-<version>`, else the same name in `.cache/`
under the repository (git ignores `.cache/`). A failed install fails the test under
CI=true and skips it elsewhere (tests/needs.py).
"""

import fcntl
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.needs import missing

REPO = Path(__file__).resolve().parents[2]
VERSION = "0.3.285"
INSTALL_TIMEOUT_S = 900
READ_TIMEOUT_S = 300


def _cache_root() -> Path:
    return Path(os.environ.get("LABRXIV_TEST_CACHE") or REPO / ".cache")


def inspect_venv() -> Path:
    """The virtualenv holding Inspect AI, installed by pip the first time (one process
    at a time builds it)."""
    venv = _cache_root() / f"inspect-ai-{VERSION}"
    done = venv / ".installed"
    if done.exists():
        return venv
    python = shutil.which("python3.11") or sys.executable
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(venv.parent / f"{venv.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if done.exists():
            return venv
        shutil.rmtree(venv, ignore_errors=True)
        steps = [
            [python, "-m", "venv", str(venv)],
            [str(venv / "bin" / "pip"), "install", "--quiet", f"inspect-ai=={VERSION}"],
        ]
        for step in steps:
            try:
                result = subprocess.run(
                    step,
                    stdin=subprocess.DEVNULL,
                    capture_output=True,
                    text=True,
                    timeout=INSTALL_TIMEOUT_S,
                )
            except subprocess.TimeoutExpired:
                missing(f"installing Inspect AI took over {INSTALL_TIMEOUT_S} s: {step}")
            if result.returncode != 0:
                missing(f"installing Inspect AI failed ({step}):\n{result.stderr[-3000:]}")
        done.touch()
    return venv


def run_in_inspect(script: str, *args: str) -> Any:
    """What `script` prints as JSON, run by the Inspect AI virtualenv's python with `args`."""
    python = inspect_venv() / "bin" / "python"
    result = subprocess.run(
        [str(python), "-c", script, *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=READ_TIMEOUT_S,
    )
    if result.returncode != 0:
        raise AssertionError(f"Inspect AI's python failed:\n{result.stderr[-5000:]}")
    return json.loads(result.stdout)
