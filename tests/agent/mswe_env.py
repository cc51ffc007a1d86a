"""mini-swe-agent for tests: its profile (workers/agent/profiles/mini-swe-agent.toml),
the command line and environment the profile gives, and a virtualenv built once by the
profile's own `install` line into a cache folder.

Its folder in the test cache (tests/cached_tools.py) is
`mini-swe-agent-<version>-<install line's hash>`.
"""

import hashlib
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tests.cached_tools import built_once

REPO = Path(__file__).resolve().parents[2]
PROFILES = REPO / "workers" / "agent" / "profiles"
PROFILE = PROFILES / "mini-swe-agent.toml"


def profile() -> dict[str, Any]:
    """The profile, as its TOML reads."""
    return tomllib.loads(PROFILE.read_text())


def mswe_venv() -> Path:
    """The virtualenv holding the profile's version of mini-swe-agent, installed by the
    profile's `install` line the first time."""
    found = profile()
    digest = hashlib.sha256(found["install"].encode()).hexdigest()[:8]
    return built_once(
        f"mini-swe-agent-{found['version']}-{digest}",
        "mini-swe-agent",
        lambda venv: [
            ["/bin/sh", "-c", found["install"].format(install_dir=venv, version=found["version"])]
        ],
        needs=("python3.11",),
    )


def command_line(
    found: Mapping[str, Any], venv: Path, model: str, task: Path, step_limit: int
) -> list[str]:
    """The profile's command with its placeholders filled in."""
    values = {
        "install_dir": str(venv),
        "version": found["version"],
        "config": str(PROFILES / found["config"]),
        "model": model,
        "task": str(task),
        "step_limit": str(step_limit),
    }
    return [part.format_map(values) for part in found["command"]]


def environment(
    found: Mapping[str, Any], path: str, home: Path, base_url: str, api_key: str
) -> dict[str, str]:
    """The whole environment of the agent process: the profile's `env` and the four the
    integrator adds."""
    return dict(found["env"]) | {
        "PATH": path,
        "HOME": str(home),
        "OPENAI_BASE_URL": base_url,
        "OPENAI_API_KEY": api_key,
    }
