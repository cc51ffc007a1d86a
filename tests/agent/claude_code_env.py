"""Claude Code for tests: its profile (workers/agent/profiles/claude-code.toml) and an npm
prefix installed once by the profile's own `install` line (the machine's npm) into the
test cache (tests/cached_tools.py) as `claude-code-<version>-<install line's hash>`."""

import hashlib
import tomllib
from pathlib import Path

from tests.cached_tools import built_once

REPO = Path(__file__).resolve().parents[2]
PROFILE = REPO / "workers" / "agent" / "profiles" / "claude-code.toml"


def claude_code_prefix() -> Path:
    """The npm prefix holding the profile's version of Claude Code, installed by the
    profile's `install` line the first time."""
    found = tomllib.loads(PROFILE.read_text())
    digest = hashlib.sha256(found["install"].encode()).hexdigest()[:8]
    install = found["install"]
    return built_once(
        f"claude-code-{found['version']}-{digest}",
        "Claude Code",
        lambda prefix: [
            ["mkdir", "-p", str(prefix)],
            ["/bin/sh", "-c", install.format(install_dir=prefix, version=found["version"])],
        ],
        needs=("npm",),
    )
