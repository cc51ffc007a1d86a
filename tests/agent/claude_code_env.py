"""Claude Code for tests: its profile (workers/agent/profiles/claude-code.toml) and an npm
prefix installed once by the profile's own `install` line (the machine's npm) into a
cache folder: `$LABRXIV_TEST_CACHE/claude-code-<version>-<install line's hash>`, else
the same name in `.cache/` under the repository. A missing npm or a failed install
fails the test under CI=true and skips it elsewhere (tests/needs.py)."""

import fcntl
import hashlib
import os
import shutil
import subprocess
import tomllib
from pathlib import Path

from tests.needs import missing

REPO = Path(__file__).resolve().parents[2]
PROFILE = REPO / "workers" / "agent" / "profiles" / "claude-code.toml"
INSTALL_TIMEOUT_S = 900


def claude_code_prefix() -> Path:
    """The npm prefix holding the profile's version of Claude Code, installed by the
    profile's `install` line the first time (one process at a time installs it)."""
    found = tomllib.loads(PROFILE.read_text())
    digest = hashlib.sha256(found["install"].encode()).hexdigest()[:8]
    root = Path(os.environ.get("LABRXIV_TEST_CACHE") or REPO / ".cache")
    prefix = root / f"claude-code-{found['version']}-{digest}"
    done = prefix / ".installed"
    if done.exists():
        return prefix
    if shutil.which("npm") is None:
        missing("npm is not on PATH (Claude Code's install line needs it)")
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
            missing(f"installing Claude Code took over {INSTALL_TIMEOUT_S} s: {line}")
        if result.returncode != 0:
            missing(f"installing Claude Code failed ({line}):\n{result.stderr[-3000:]}")
        prefix.chmod(0o755)
        done.touch()
    return prefix
