"""`labrxiv demo` run by a normal user, for real (not a patched `geteuid`): it runs its
labs in the rootless sandbox and writes its report; asked for the root jail, it refuses
in one line with exit code 2 and leaves nothing half-written.

The demo runs as `labrxiv-user` (`tests/unprivileged.py`: made when absent, and able to
reach this interpreter even where it lives under a folder closed to others).
"""

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from events import EventStore
from tests.unprivileged import NORMAL_USER, normal_user, run_as

DEMO = ["--labs", "2", "--papers", "1", "--attempts", "2", "--seed", "3"]


@pytest.fixture
def workdir() -> Iterator[Path]:
    """A fresh folder the normal user owns, with a home folder of its own in it (pytest's
    tmp_path is under a folder of mode 700)."""
    uid, gid = normal_user()
    folder = Path(tempfile.mkdtemp(prefix="labrxiv-user-"))
    (folder / "home").mkdir()
    for path in (folder, folder / "home"):
        path.chmod(0o755)
        os.chown(path, uid, gid)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def demo_as_normal_user(workdir: Path, *extra: str, **env: str) -> tuple[int, str]:
    command = [sys.executable, "-m", "labrxiv.cli", "demo", "--report", str(workdir / "report")]
    environment = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": str(workdir / "home"),
        "LANG": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "LABRXIV_DATA_DIR": str(workdir / "data"),
        "COLUMNS": "200",
        **env,
    }
    done = run_as(NORMAL_USER, [*command, *extra], workdir, environment, timeout=900)
    return done.returncode, (done.stdout + done.stderr).strip()


@pytest.mark.slow
def test_demo_as_a_normal_user_runs_its_labs_in_the_rootless_sandbox(workdir: Path) -> None:
    code, said = demo_as_normal_user(workdir, *DEMO)
    assert code == 0, said
    assert "sandbox: userns (rootless: unprivileged user namespaces; " in said, said
    # How a call's tree is bounded is said in that line alone, not in a warning beside it.
    sandbox_lines = [line for line in said.splitlines() if line.startswith("sandbox: ")]
    assert len(sandbox_lines) == 1, said
    assert [line for line in said.splitlines() if "cgroup" in line] == sandbox_lines, said
    summary = (workdir / "report" / "summary.md").read_text()
    assert "best normalized score" in summary, summary
    store = EventStore.from_url(f"sqlite:///{workdir / 'data' / 'demo' / 'labrxiv.db'}")
    started = store.read_records(types=["run.started"])
    assert len(started) == 4 and {r.payload["sandbox"] for r in started} == {"userns"}
    scored = store.read_records(types=["experiment.scored"])
    assert scored, "no lab's attempt was scored"
    endings = [r.payload for r in store.read_records(types=["run.finished"])]
    assert all(p["reason"] == "done" for p in endings), endings


def test_the_root_jail_asked_for_by_a_normal_user_refuses_in_one_line_and_writes_nothing(
    workdir: Path,
) -> None:
    code, said = demo_as_normal_user(workdir, LABRXIV_SANDBOX="jail")
    assert code == 2, said
    assert said.count("\n") == 0, said
    assert said.startswith("labs cannot run here:") and "root" in said, said
    # Refused before anything was made: no data folder, no log, no report (the data
    # folder is where the user may write it: only the refusal keeps it from being made).
    assert sorted(p.name for p in workdir.iterdir()) == ["home"], said
