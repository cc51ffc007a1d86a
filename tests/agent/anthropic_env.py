"""Anthropic's Python client for tests: a virtualenv of its own, built once into a cache
folder by pip (the client is no dependency of labrxiv), and a way to run code with it.

The cache is `$LABRXIV_TEST_CACHE/anthropic-<version>`, else the same name in `.cache/`
under the repository. A failed install fails the test under CI=true and skips it
elsewhere (tests/needs.py).
"""

import fcntl
import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.needs import missing

REPO = Path(__file__).resolve().parents[2]
VERSION = "2.14.0"
INSTALL_TIMEOUT_S = 600


def anthropic_python() -> Path:
    """The Python of a virtualenv holding `anthropic==VERSION`, built the first time (one
    process at a time builds it)."""
    root = Path(os.environ.get("LABRXIV_TEST_CACHE") or REPO / ".cache")
    venv = root / f"anthropic-{VERSION}"
    done = venv / ".installed"
    python = venv / "bin" / "python"
    if done.exists():
        return python
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(venv.parent / f"{venv.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if done.exists():
            return python
        shutil.rmtree(venv, ignore_errors=True)
        steps = [
            [sys.executable, "-m", "venv", str(venv)],
            [str(python), "-m", "pip", "install", "--quiet", f"anthropic=={VERSION}"],
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
                missing(f"installing anthropic took over {INSTALL_TIMEOUT_S} s: {step}")
            if result.returncode != 0:
                missing(f"installing anthropic failed ({step}):\n{result.stderr[-3000:]}")
        done.touch()
    return python
