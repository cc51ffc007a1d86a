"""Inspect AI for tests: a virtualenv holding `inspect-ai` at `VERSION`, built once into
a cache folder, so a test can read an exported `.eval` with Inspect AI's own reader.
Inspect AI is no dependency of labrxiv; only these tests install it.

The cache is `$LABRXIV_TEST_CACHE/inspect-ai-<version>`, else the same name in `.cache/`
under the repository (git ignores `.cache/`). A failed install fails the test under
CI=true and skips it elsewhere (tests/needs.py).
"""

import json
import subprocess
from pathlib import Path
from typing import Any

from tests.cached_tools import pip_venv

REPO = Path(__file__).resolve().parents[2]
VERSION = "0.3.285"
READ_TIMEOUT_S = 300


def inspect_venv() -> Path:
    """The virtualenv holding Inspect AI, installed by pip the first time."""
    return pip_venv(f"inspect-ai-{VERSION}", "Inspect AI", f"inspect-ai=={VERSION}")


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
