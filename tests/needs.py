"""What a test needs from the machine (a server, a tool, root): under CI=true, where
`.ci/run` provides it, its absence fails the test; on a newcomer's machine the test is
skipped, saying what to install."""

import os
from typing import NoReturn

import pytest

IN_CI = os.environ.get("CI", "").lower() == "true"


def missing(message: str) -> NoReturn:
    """Stop the test for want of what `message` names: a failure under CI, else a skip."""
    if IN_CI:
        pytest.fail(message)
    pytest.skip(message)
