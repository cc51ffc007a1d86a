"""What a test needs from the machine (a server, a tool, root): under CI=true, where
`.ci/run` provides it, its absence fails the test; on a newcomer's machine the test is
skipped, saying what to install. A test that needs root says so with `needs_root`: CI
runs as root, a normal user's `make test` skips it with "needs root: …" (`-rs` lists
them)."""

import os
from typing import NoReturn

import pytest

IN_CI = os.environ.get("CI", "").lower() == "true"


def missing(message: str) -> NoReturn:
    """Stop the test for want of what `message` names: a failure under CI, else a skip."""
    if IN_CI:
        pytest.fail(message)
    pytest.skip(message)


def needs_root(why: str) -> None:
    """Stop the test unless this is root (`why`: what root is needed for), as `missing`
    does: skipped for a normal user, a failure under CI, which runs as root."""
    if os.geteuid() != 0:
        missing(f"needs root: {why}")
