"""The process jail: its own root, mount, network and PID namespaces, an unprivileged user.

`unshare --mount --net --pid` gives the process no network (not even loopback, unless
the sandbox asks for it: then a loopback of the jail's own, which reaches nothing of the
machine's), its own process table and its own mount table. In that mount table
`jail_init.py` builds a fresh root and pivots into it: the system (`/usr`, `/etc`, the
library folders), the interpreter's folders and those the sandbox shows (an agent's)
read-only, the workspace read-write at /mnt/workspace, a private /tmp, /dev/shm and
/proc, and nothing else. What the jail must not see is simply not
there: not the task bundles, the data folder or other runs' workspaces, and not their
copies either (the hidden data is also in the repository's git objects, which a list of
covered paths would miss). A path to hide that lies inside a folder shown is
still covered with an empty read-only tmpfs.

The same init (PID 1 of the namespace) runs the command as its child, under `setpriv`
as the `nobody` user with no capabilities, and reports the child's wait status on a
pipe. When the command ends, or the jail is killed, or the worker thread that started
it dies (`preexec`), the kernel kills every process left in the namespace: nothing a lab
starts outlives its tool call or its worker (a `setsid` or `nohup` process included),
and no process of one run can see, signal or enter (`/proc/<pid>/cwd`,
`/proc/<pid>/root`) a process of another run, though both run as `nobody`. Limits are
rlimits set before exec and inherited, plus a cgroup per process tree where one can be
made (`cgroup.py`).
"""

import ctypes
import functools
import grp
import os
import pwd
import resource
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from workers.sandbox.base import Limits, SandboxUnavailable
from workers.sandbox.cgroup import TreeGroup

SANDBOX_USER = "nobody"
SANDBOX_GROUP = "nogroup"

WORKSPACE_MOUNT = "/mnt/workspace"
"""Where the workspace appears inside the jail."""

SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
"""Folders of the machine every jail sees, read-only (a symlink, as /bin on a merged-/usr
system, is copied as a symlink)."""

INIT = Path(__file__).with_name("jail_init.py")
"""PID 1 of every jail: builds its root, runs the command, reports how it ended."""

_LIBC = ctypes.CDLL(None, use_errno=True)
"""Loaded before any fork: a `preexec_fn` only calls it."""
_PR_SET_PDEATHSIG = 1


@dataclass(frozen=True)
class Jail:
    """What a jail shows and how it runs its init."""

    workspace: Path
    hidden: Sequence[Path]
    """Paths to cover if a folder shown holds them."""
    runtime: Sequence[Path] = ()
    """Further folders to show read-only (the interpreter's, an agent's)."""
    python: str | None = None
    """The interpreter that runs the init (None: this one)."""
    loopback: bool = False
    """The jail's own loopback is up."""


def jail_argv(command: Sequence[str], jail: Jail, status_fd: int | None = None) -> list[str]:
    """The argv that runs `command` jailed as `jail` says, as `nobody` (`status_fd`: where
    the init writes the command's wait status)."""
    check_available()
    drop = [
        located("setpriv"), f"--reuid={SANDBOX_USER}", f"--regid={SANDBOX_GROUP}",
        "--clear-groups", "--no-new-privs", "--",
    ]  # fmt: skip
    init = init_argv([*drop, *command], jail, status_fd)
    return [
        located("unshare"), "--mount", "--net", "--pid", "--fork", "--kill-child",
        "--propagation", "private", "--", *init,
    ]  # fmt: skip


def init_argv(
    command: Sequence[str],
    jail: Jail,
    status_fd: int | None = None,
    user: tuple[int, int, int] | None = None,
) -> list[str]:
    """The argv of the jail's init (`jail_init.py`), which builds the jail's root in the
    namespaces it was started in and runs `command` there (as `user`: uid, gid and
    process limit, in a user namespace of its own, if given), writing the command's wait
    status to `status_fd` (None: stderr)."""
    readonly = [*SYSTEM, *(str(path) for path in jail.runtime)]
    enter = ["--enter-user", *map(str, user)] if user else []
    up = ["--loopback"] if jail.loopback else []
    return [
        jail.python or sys.executable, "-I", "-S", str(INIT), *up, *enter, str(jail.workspace),
        str(status_fd or 2), *readonly, "--", *map(str, jail.hidden), "--", *command,
    ]  # fmt: skip


def located(tool: str) -> str:
    """The full path of `tool` on the worker's PATH: the jail's wrappers are found there,
    not on the PATH a command is given (`LocalSandbox.exec`'s `env`)."""
    return shutil.which(tool) or tool


@functools.cache
def interpreter_folders(python: str) -> tuple[Path, ...]:
    """The folders `python` needs to run: its venv, and the installation it points at
    (found once a process: a sandbox is made at every step of every run).

    A folder under a system folder the jail shows anyway is left out, and so is `/`.
    """
    folders = []
    venv = Path(python).parent.parent
    if (venv / "pyvenv.cfg").is_file():
        folders.append(Path(os.path.realpath(venv)))
    folders.append(Path(os.path.realpath(python)).parent.parent)
    shown = [Path(folder) for folder in SYSTEM]
    return tuple(
        folder
        for folder in dict.fromkeys(folders)
        if folder != Path("/") and not any(folder == s or s in folder.parents for s in shown)
    )


def preexec(limits: Limits, group: TreeGroup | None, processes: bool = True) -> Callable[[], None]:
    """A `preexec_fn` that puts the child in `group` and applies `limits` before it execs.

    The tree's process count is bounded by its cgroup (`pids.max`) where one was made,
    and by RLIMIT_NPROC only where none could be: that limit counts every process of the
    sandbox user on the machine, so one jail's fork bomb at the limit made every other
    jail's forks fail for as long as it lasted ("sh: Cannot fork" in another run's
    `evaluate`: a lab test failed beside the escape suite's fork bombs). `processes`
    False: RLIMIT_NPROC is left to the jail's init, which sets it in the command's own
    user namespace (the rootless backend).

    The child is killed when the thread that started it dies (`PR_SET_PDEATHSIG`): the
    jail's first process (`unshare`, in a session of its own) then dies, and with it, by
    `--kill-child`, the jail's init and every process of its PID namespace. A worker
    SIGKILLed mid-command left its jail running unparented, in the workspace the step's
    next take rebuilds and runs in (an agent's session: two agents in one workspace)."""
    parent = os.getpid()

    def apply() -> None:
        _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:  # it died before the signal was asked for
            os.kill(os.getpid(), signal.SIGKILL)
        if group is not None:
            group.enter()
        resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_seconds, limits.cpu_seconds + 5))
        resource.setrlimit(resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes))
        resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_bytes, limits.file_bytes))
        if group is None and processes:
            resource.setrlimit(resource.RLIMIT_NPROC, (limits.processes, limits.processes))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    return apply


def hand_to_sandbox_user(path: Path) -> None:
    """Make the workspace writable by the sandbox user (it owns nothing else).

    Never follows a symlink: the workspace is the lab's, and a link it made (its `.tmp`
    pointing at /etc, say) would otherwise have root give the lab what it points at.
    """
    uid, gid = sandbox_ids()
    os.chown(path, uid, gid, follow_symlinks=False)
    if path.is_symlink() or not path.is_dir():
        return
    for base, dirs, files in os.walk(path):
        for name in dirs + files:
            os.chown(os.path.join(base, name), uid, gid, follow_symlinks=False)


@functools.cache
def sandbox_ids() -> tuple[int, int]:
    """The sandbox user's uid and gid."""
    return pwd.getpwnam(SANDBOX_USER).pw_uid, grp.getgrnam(SANDBOX_GROUP).gr_gid


@functools.cache
def check_available() -> None:
    """Raise `SandboxUnavailable` naming what is missing when lab code cannot be run here
    (tools, root, namespaces), before any run is started or workspace handed over."""
    # Root first: a user's PATH often lacks /usr/sbin (pivot_root), and root is the need.
    if os.geteuid() != 0:
        raise SandboxUnavailable(
            "the root jail needs root: run labrxiv workers as root (e.g. in their "
            "container), or let them use the rootless sandbox (LABRXIV_SANDBOX=auto or userns)"
        )
    tools = ("unshare", "setpriv", "pivot_root")
    missing = [tool for tool in tools if shutil.which(tool) is None]
    if missing:
        raise SandboxUnavailable(f"sandbox needs {', '.join(missing)} (util-linux) on PATH")
    namespaces = ["--mount", "--net", "--pid", "--fork", "--propagation", "private"]
    probe = subprocess.run(
        ["unshare", *namespaces, "--", "true"],
        capture_output=True,
        text=True,
        check=False,
    )
    if probe.returncode != 0:
        raise SandboxUnavailable(f"unshare is not permitted here: {probe.stderr.strip()}")
