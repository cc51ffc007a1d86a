"""A call's cgroup: what is left of its tree is killed through it (`cgroup.kill` under
cgroup v2, each listed process under v1), also in a cgroup v2 subtree delegated to a
normal user; where none can be made, the one `sandbox:` line says so and nothing else is
logged."""

import logging
import os
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.needs import missing, needs_root
from tests.unprivileged import NORMAL_USER, normal_user, run_as
from workers.sandbox import cgroup
from workers.sandbox.backends import choose, describe
from workers.sandbox.cgroup import TreeGroup, remove_when_let_go

TREE = "sleep 600 & sleep 600 & (sleep 600 &) ; wait"
"""A shell with children and an orphaned grandchild, all living until killed."""


@pytest.fixture
def v2_group() -> Iterator[Path]:
    """An empty cgroup v2 folder under this process's own v2 cgroup (as root)."""
    needs_root("to make a cgroup v2 folder for the test")
    mounts, own = cgroup._cgroup_mounts(), cgroup._own_cgroups()
    if "" not in mounts or "" not in own:
        missing("no cgroup v2 hierarchy is mounted here")
    folder = mounts[""] / own[""].lstrip("/") / f"labrxiv-test-{uuid.uuid4().hex[:12]}"
    try:
        folder.mkdir()
    except OSError as exc:
        missing(f"cannot make a cgroup v2 folder here: {exc}")
    if not (folder / "cgroup.kill").exists():
        folder.rmdir()
        missing("this kernel's cgroup v2 has no cgroup.kill (Linux 5.14 and later)")
    yield folder
    for child in [entry for entry in folder.iterdir() if entry.is_dir()]:
        remove_when_let_go(child)
    remove_when_let_go(folder)


def _tree_in(group: TreeGroup) -> subprocess.Popen[bytes]:
    shell = subprocess.Popen(["sh", "-c", TREE], preexec_fn=group.enter)
    folder = next(iter(group.folders.values()))
    while len(cgroup._members(folder)) < 4:  # the shell, its two children, the orphan
        assert shell.poll() is None, "the tree ended before it was killed"
        time.sleep(0.01)
    return shell


def _emptied(folder: Path) -> bool:
    """Whether the cgroup empties: killed processes leave it once the kernel has reaped
    them, soon after the signal; a minute is far more than it takes."""
    deadline = time.monotonic() + 60
    while cgroup._members(folder):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_kill_ends_the_whole_tree_through_cgroup_kill_under_v2(v2_group: Path) -> None:
    group = TreeGroup({"memory": v2_group, "pids": v2_group})
    shell = _tree_in(group)
    group.kill()
    assert shell.wait(timeout=60) == -9
    assert _emptied(v2_group), "a process of the tree outlived the kill"


def test_kill_ends_the_whole_tree_process_by_process_under_v1() -> None:
    group = TreeGroup.create(64 * 1024**2, 16)
    if group is None:
        missing("no cgroup with the memory and pids controllers can be made here (run as root)")
    try:
        if (group.folders["pids"] / "cgroup.kill").exists():
            pytest.skip("this cgroup is v2: the cgroup.kill test covers it")
        shell = _tree_in(group)
        group.kill()
        assert shell.wait(timeout=60) == -9
        assert all(_emptied(folder) for folder in group.folders.values())
    finally:
        group.remove()
        cgroup.finish_removals()


KILL_AS_USER = """
import os, subprocess, sys, time
from pathlib import Path
from workers.sandbox import cgroup
from workers.sandbox.cgroup import TreeGroup

delegated = Path(sys.argv[1])
folder = delegated / "call"
folder.mkdir()
group = TreeGroup({"memory": folder, "pids": folder})
shell = subprocess.Popen(["sh", "-c", sys.argv[2]], preexec_fn=group.enter)
while len(cgroup._members(folder)) < 4:
    assert shell.poll() is None
    time.sleep(0.01)
group.kill()
code = shell.wait(timeout=60)
deadline = time.monotonic() + 60
while cgroup._members(folder) and time.monotonic() < deadline:
    time.sleep(0.01)
print(code, cgroup._members(folder), os.geteuid())
"""


def test_a_normal_user_kills_a_tree_in_the_cgroup_v2_subtree_delegated_to_it(
    v2_group: Path,
) -> None:
    """As a systemd user session delegates a subtree: the folder and its files are the
    user's, the user's process is in it and makes a child cgroup per call. This machine's
    v2 hierarchy may lack the memory and pids controllers (held by v1): what is checked
    is the delegation and the kill, not the limits."""
    uid, gid = normal_user()
    for path in [v2_group, *v2_group.iterdir()]:
        os.chown(path, uid, gid)
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}
    repo = Path(cgroup.__file__).resolve().parents[2]
    command = [sys.executable, "-c", textwrap.dedent(KILL_AS_USER), str(v2_group), TREE]
    done = run_as(NORMAL_USER, command, repo, env, timeout=120, cgroups=[v2_group])
    assert done.returncode == 0, done.stderr
    code, members, euid = done.stdout.split(maxsplit=2)
    assert (code, members, int(euid)) == ("-9", "[]", uid), done.stdout


def test_the_sandbox_line_says_a_tree_bounded_per_process_and_nothing_is_logged_after(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(cgroup, "_parents", lambda: None)
    monkeypatch.setattr(cgroup, "_warned", set())
    backend = choose(os.environ.get("LABRXIV_SANDBOX", "auto"))
    line = describe(backend)
    assert line.startswith(f"sandbox: {backend.backend} ({backend.summary}; memory and ")
    assert "bounded per process (rlimits): no cgroup with the memory and pids" in line, line
    with caplog.at_level(logging.WARNING, logger=cgroup.__name__):
        assert TreeGroup.create(64 * 1024**2, 8) is None
    assert caplog.records == [], "said in the sandbox line, the reason was logged again"


def test_the_sandbox_line_says_a_cgroup_per_call_where_one_can_be_made() -> None:
    group = TreeGroup.create(64 * 1024**2, 8)
    if group is None:
        missing("no cgroup with the memory and pids controllers can be made here (run as root)")
    group.remove()
    line = describe(choose("auto"))
    assert line.endswith("; a cgroup per call bounds its memory and processes)"), line
