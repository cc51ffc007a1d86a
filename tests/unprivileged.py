"""Running a command as a normal user, for real (not a patched `geteuid`), from a test run
as root (as CI runs): the rootless sandbox is exercised as the users it is for.

The user is `labrxiv-user`, made with `useradd` when absent (a system user with no home
and no login shell). The interpreter may live where others cannot go (pyenv under a
`/root` of mode 700): such a folder is covered, in a private mount namespace of the
test's own, by a world-readable tmpfs into which the folders the interpreter needs are
bound back. Nothing changes outside that namespace.
"""

import os
import pwd
import shlex
import shutil
import stat
import subprocess
import sys
import sysconfig
import tempfile
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest

import labrxiv
from tests.needs import missing, needs_root
from workers.sandbox.backends import Backend, _backends
from workers.sandbox.base import SandboxUnavailable
from workers.sandbox.cgroup import _parents, remove_when_let_go

NORMAL_USER = "labrxiv-user"
"""The unprivileged user tests run commands as."""


def normal_user() -> tuple[int, int]:
    """The normal user's uid and gid, made first if absent; needs root (else `missing`)."""
    needs_root("to run a command as another user")
    tools = [shutil.which(name) for name in ("setpriv", "unshare", "useradd")]
    if not all(tools):
        missing("setpriv, unshare and useradd are needed to run a command as a normal user")
    try:
        found = pwd.getpwnam(NORMAL_USER)
    except KeyError:
        made = subprocess.run(
            ["useradd", "--system", "--user-group", "--no-create-home", "--shell",
             "/usr/sbin/nologin", NORMAL_USER],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        if made.returncode != 0 and "already exists" not in made.stderr:
            missing(f"cannot make the user {NORMAL_USER}: {made.stderr.strip()}")
        found = pwd.getpwnam(NORMAL_USER)
    return found.pw_uid, found.pw_gid


def needed_folders() -> list[Path]:
    """What this interpreter reads: the venv, its base installation, the project.

    A folder others may not enter itself (a clone in a `mktemp -d` folder of mode 700,
    as CI makes) is given as its entries: binding it back would bring its mode back."""
    folders = {Path(sys.prefix), Path(sys.base_prefix), Path(labrxiv.__file__).parent.parent}
    folders.add(Path(sysconfig.get_paths()["stdlib"]))
    needed: set[Path] = set()
    for folder in {folder.resolve() for folder in folders}:
        if folder.stat().st_mode & stat.S_IXOTH:
            needed.add(folder)
        else:
            needed.update(folder.iterdir())
    # a folder inside another needed one is bound back with it
    return sorted(p for p in needed if not any(q in p.parents for q in needed))


def closed_ancestors(folder: Path) -> list[Path]:
    """Ancestors of `folder` that others may not enter (no o+x), outermost first."""
    return [
        parent
        for parent in reversed(folder.parents)
        if parent != Path("/") and not parent.stat().st_mode & stat.S_IXOTH
    ]


def opening_script(scratch: Path) -> str:
    """Shell lines, run in a private mount namespace, that let others reach the needed
    folders: each closed folder is covered by a tmpfs of mode 755 with them bound back."""
    lines = []
    closed: dict[Path, list[Path]] = {}
    for folder in needed_folders():
        ancestors = closed_ancestors(folder)
        if ancestors:
            closed.setdefault(ancestors[0], []).append(folder)
    for index, (cover, inside) in enumerate(sorted(closed.items())):
        for number, folder in enumerate(inside):
            keep = scratch / f"keep-{index}-{number}"
            lines += [_make(keep, folder.is_dir()), f"mount --bind {folder} {keep}"]
        lines.append(f"mount -t tmpfs -o mode=755 tmpfs {cover}")
        for number, folder in enumerate(inside):
            keep = scratch / f"keep-{index}-{number}"
            lines += [_make(folder, folder.is_dir()), f"mount --bind {keep} {folder}"]
    return "\n".join(lines)


def _make(path: Path, folder: bool) -> str:
    """A shell line making a mount point for a folder or a file."""
    if folder:
        return f"mkdir -p {shlex.quote(str(path))}"
    return f"mkdir -p {shlex.quote(str(path.parent))} && touch {shlex.quote(str(path))}"


@contextmanager
def delegated_cgroups(uid: int, gid: int) -> Iterator[list[Path]]:
    """Cgroups (v1 `memory` and `pids`) of this process's, given to the user `uid`, as a
    systemd user session delegates one to its user; none (an empty list) where this
    machine has no v1 hierarchies to make them in. Removed afterwards."""
    parents = _parents()
    if parents is None or parents["memory"] == parents["pids"]:
        yield []
        return
    name = f"labrxiv-delegated-{uuid.uuid4().hex[:12]}"
    made = [parent / name for parent in parents.values()]
    try:
        for folder in made:
            folder.mkdir()
            for path in [folder, *folder.iterdir()]:
                os.chown(path, uid, gid)
        yield made
    finally:
        for folder in made:
            for child in [entry for entry in folder.iterdir() if entry.is_dir()]:
                remove_when_let_go(child)
            remove_when_let_go(folder)


def run_as(
    user: str,
    command: Sequence[str],
    cwd: Path,
    env: Mapping[str, str],
    timeout: float,
    cgroups: Sequence[Path] = (),
    setup: str = "",
) -> subprocess.CompletedProcess[str]:
    """Run `command` as `user` (its own group, no other) in `cwd`, with `env` alone, where
    this interpreter and the project are reachable, in `cgroups` if given, after the shell
    lines `setup` (run as root in the private mount namespace); its output captured."""
    scratch = Path(tempfile.mkdtemp(prefix="labrxiv-mounts-"))
    drop = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups", "env", "-i"]
    drop += [f"{name}={value}" for name, value in env.items()]
    enter = "".join(f"echo $$ > {shlex.quote(str(group / 'cgroup.procs'))}\n" for group in cgroups)
    script = (
        f"set -e\n{opening_script(scratch)}\n{setup}\n{enter}cd {shlex.quote(str(cwd))}\n"
        f"exec {shlex.join([*drop, *command])}"
    )
    try:
        return subprocess.run(
            ["unshare", "--mount", "--propagation", "private", "sh", "-c", script],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def pytest_as_normal_user(
    test_file: Path, selection: str, timeout: float, delegate: bool = False
) -> subprocess.CompletedProcess[str]:
    """`pytest test_file -k selection` run as the normal user, one process, no cache;
    `delegate`: in cgroups of its own (`delegated_cgroups`), where they can be made."""
    uid, gid = normal_user()
    home = Path(tempfile.mkdtemp(prefix="labrxiv-user-home-"))
    os.chown(home, uid, gid)
    repo = Path(labrxiv.__file__).resolve().parent.parent
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "CI": os.environ.get("CI", ""),
    }
    command = [
        sys.executable, "-m", "pytest", str(test_file), "-k", selection, "-q", "-n", "0",
        "-p", "no:randomly", "-p", "no:cacheprovider", "-rs", f"--basetemp={home / 'pytest'}",
    ]  # fmt: skip
    try:
        if not delegate:
            return run_as(NORMAL_USER, command, repo, env, timeout)
        with delegated_cgroups(uid, gid) as groups:
            return run_as(NORMAL_USER, command, repo, env, timeout, groups)
    finally:
        shutil.rmtree(home, ignore_errors=True)


def rootless_pass_as_normal_user(test_file: Path, timeout: float, delegate: bool = False) -> None:
    """Run as root (as CI runs), `test_file`'s rootless backends' tests again as a normal
    user, the user those backends are for: every one must pass, none be skipped. Skipped
    when already a normal user (they ran in this same run)."""
    if os.geteuid() != 0:
        pytest.skip("already a normal user: the rootless backend's tests ran above")
    from workers.sandbox.backends import backend_names

    rootless = [name for name in backend_names() if name != "jail"]
    done = pytest_as_normal_user(test_file, " or ".join(rootless), timeout, delegate)
    said = done.stdout + done.stderr
    assert done.returncode == 0, said[-20000:]
    assert " passed" in said and "skipped" not in said, said[-20000:]


def usable(name: str) -> Backend:
    """The backend `name`, where it is meant to run: the root jail as root, the rootless
    one as a normal user (as root, a normal user's run of this suite covers it)."""
    if name == "jail":
        needs_root("the root jail runs as root")
    if name != "jail" and os.geteuid() == 0:
        pytest.skip(f"{name} is for normal users: run as one by the suite's normal-user test")
    backend = _backends()[name]
    try:
        backend.check()
    except SandboxUnavailable as exc:
        missing(f"the {name} sandbox cannot run here: {exc}")
    return backend
