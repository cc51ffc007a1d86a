"""Codex CLI for tests: its profile (workers/agent/profiles/codex.toml), the command line
and environment the profile gives, and an npm prefix installed once by the profile's own
`install` line (the machine's npm) into a cache folder.

The cache is `$LABRXIV_TEST_CACHE/codex-<version>-<install line's hash>`, else the same
name in `.cache/` under the repository (git ignores `.cache/`). A missing npm or a failed
install fails the test under CI=true and skips it elsewhere (tests/needs.py).
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
PROFILE = REPO / "workers" / "agent" / "profiles" / "codex.toml"
INSTALL_TIMEOUT_S = 900


def profile() -> dict[str, Any]:
    """The profile, as its TOML reads."""
    return tomllib.loads(PROFILE.read_text())


def _cache_root() -> Path:
    return Path(os.environ.get("LABRXIV_TEST_CACHE") or REPO / ".cache")


def codex_prefix() -> Path:
    """The npm prefix holding the profile's version of Codex CLI, installed by the
    profile's `install` line the first time (one process at a time installs it)."""
    found = profile()
    digest = hashlib.sha256(found["install"].encode()).hexdigest()[:8]
    prefix = _cache_root() / f"codex-{found['version']}-{digest}"
    done = prefix / ".installed"
    if done.exists():
        return prefix
    if shutil.which("npm") is None:
        missing("npm is not on PATH (Codex CLI's install line needs it)")
    prefix.parent.mkdir(parents=True, exist_ok=True)
    with open(prefix.parent / f"{prefix.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if done.exists():
            return prefix
        shutil.rmtree(prefix, ignore_errors=True)
        prefix.mkdir()
        line = found["install"].format(install_dir=prefix, version=found["version"])
        try:
            result = subprocess.run(
                ["/bin/sh", "-c", line],
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=INSTALL_TIMEOUT_S,
            )
        except subprocess.TimeoutExpired:
            missing(f"installing Codex CLI took over {INSTALL_TIMEOUT_S} s: {line}")
        if result.returncode != 0:
            missing(f"installing Codex CLI failed ({line}):\n{result.stderr[-3000:]}")
        prefix.chmod(0o755)
        done.touch()
    return prefix


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
