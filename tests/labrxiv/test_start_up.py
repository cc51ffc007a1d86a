"""The shell starts without the libraries only some commands use: the command line of
every command is imported at each start, and the openai SDK and scipy took 0.9 of its
2.7 s (`python -X importtime -c "import labrxiv.cli"`). The campaign's model calls and
the analysis' statistics import them when they first run."""

import subprocess
import sys

import pytest

LATE = ("openai", "scipy")


@pytest.mark.parametrize("module", ["labrxiv.cli", "workers.app"])
def test_the_shell_and_a_worker_start_without_the_sdk_and_scipy(module: str) -> None:
    found = subprocess.run(
        [sys.executable, "-c", f"import sys, {module}; print(' '.join(sorted(sys.modules)))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert [m for m in found if m.split(".")[0] in LATE] == []
