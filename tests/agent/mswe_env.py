"""mini-swe-agent for tests: its profile (workers/agent/profiles/mini-swe-agent.toml),
the command line and environment the profile gives, and a virtualenv built once by the
profile's own `install` line into a cache folder.

The cache is `$LABRXIV_TEST_CACHE/mini-swe-agent-<version>-<install line's hash>`, else
the same name in `.cache/` under the repository (git ignores `.cache/`). A
failed install fails the test under CI=true and skips it elsewhere (tests/needs.py).
"""

import fcntl
import hashlib
import os
import shutil
import subprocess
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tests.needs import missing

REPO = Path(__file__).resolve().parents[2]
PROFILES = REPO / "workers" / "agent" / "profiles"
PROFILE = PROFILES / "mini-swe-agent.toml"
INSTALL_TIMEOUT_S = 900


def profile() -> dict[str, Any]:
    """The profile, as its TOML reads."""
    return tomllib.loads(PROFILE.read_text())


def _cache_root() -> Path:
    return Path(os.environ.get("LABRXIV_TEST_CACHE") or REPO / ".cache")


def mswe_venv() -> Path:
    """The virtualenv holding the profile's version of mini-swe-agent, installed by the
    profile's `install` line the first time (one process at a time builds it)."""
    found = profile()
    digest = hashlib.sha256(found["install"].encode()).hexdigest()[:8]
    venv = _cache_root() / f"mini-swe-agent-{found['version']}-{digest}"
    done = venv / ".installed"
    if done.exists():
        return venv
    if shutil.which("python3.11") is None:
        missing("python3.11 is not on PATH (mini-swe-agent's install line needs it)")
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(venv.parent / f"{venv.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if done.exists():
            return venv
        shutil.rmtree(venv, ignore_errors=True)
        line = found["install"].format(install_dir=venv, version=found["version"])
        try:
            result = subprocess.run(
                ["/bin/sh", "-c", line],
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=INSTALL_TIMEOUT_S,
            )
        except subprocess.TimeoutExpired:
            missing(f"installing mini-swe-agent took over {INSTALL_TIMEOUT_S} s: {line}")
        if result.returncode != 0:
            missing(f"installing mini-swe-agent failed ({line}):\n{result.stderr[-3000:]}")
        done.touch()
    return venv


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
