"""Codex CLI for tests: its profile (workers/agent/profiles/codex.toml), the command line
and environment the profile gives, and an npm prefix installed once by the profile's own
`install` line (the machine's npm) into a cache folder.

Its folder in the test cache (tests/cached_tools.py) is
`codex-<version>-<install line's hash>`.
"""

import hashlib
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tests.cached_tools import built_once

REPO = Path(__file__).resolve().parents[2]
PROFILE = REPO / "workers" / "agent" / "profiles" / "codex.toml"


def profile() -> dict[str, Any]:
    """The profile, as its TOML reads."""
    return tomllib.loads(PROFILE.read_text())


def codex_prefix() -> Path:
    """The npm prefix holding the profile's version of Codex CLI, installed by the
    profile's `install` line the first time."""
    found = profile()
    digest = hashlib.sha256(found["install"].encode()).hexdigest()[:8]
    return built_once(
        f"codex-{found['version']}-{digest}",
        "Codex CLI",
        lambda prefix: [
            ["mkdir", "-p", str(prefix)],
            [
                "/bin/sh",
                "-c",
                found["install"].format(install_dir=prefix, version=found["version"]),
            ],
        ],
        needs=("npm",),
    )


def command_line(found: Mapping[str, Any], prefix: Path, model: str, task: Path) -> list[str]:
    """The profile's command with its placeholders filled in."""
    values = {
        "install_dir": str(prefix),
        "version": found["version"],
        "model": model,
        "task": str(task),
    }
    return [part.format_map(values) for part in found["command"]]


def environment(
    found: Mapping[str, Any], path: str, home: Path, base_url: str, api_key: str
) -> dict[str, str]:
    """The whole environment of the agent process: the profile's `env`, the four the
    integrator adds, and the jail's TMPDIR (the workspace's `.tmp`)."""
    return dict(found["env"]) | {
        "PATH": path,
        "HOME": str(home),
        "TMPDIR": str(home / ".tmp"),
        "OPENAI_BASE_URL": base_url,
        "OPENAI_API_KEY": api_key,
    }
