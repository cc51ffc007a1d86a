"""The rootless jail: the root jail's namespaces and root, built in an unprivileged user
namespace, so that any user can run labs.

`unshare --user --map-root-user --mount --net --pid --fork` makes the worker's user the
root of a fresh user namespace, which owns fresh mount, network and PID namespaces; in
them the root jail's init (`jail_init.py`) builds the same fresh root (the system, the
interpreter and the folders shown read-only, the workspace read-write, nothing else) and
pivots into it, with the same loopback of its own when asked for. The
command then runs in a second user namespace nested in the first, as the worker's own
uid (`nobody` when the worker is root), with no capability over the jail's mounts and
no way to gain one (`no_new_privs`), and at most `Limits.processes` processes counted in
that namespace alone. When the command ends, the init exits and the kernel kills every
process left in the PID namespace. Memory, CPU and file size are rlimits set before
exec; the tree's memory and process count also get a cgroup where one can be made (root,
or a cgroup delegated to the user).

util-linux's `unshare` and our own init rather than bubblewrap: util-linux is on every
Linux machine labrxiv runs on (the root jail needs it already), the jail's root is built
by one init for both backends, so the two cannot drift apart, and the init reports the
command's wait status the limits need. docs/labs.md says what the sandbox needs.
"""

import errno
import functools
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from workers.sandbox import cgroup
from workers.sandbox.base import Limits, SandboxUnavailable
from workers.sandbox.cgroup import TreeGroup
from workers.sandbox.jail import (
    SANDBOX_GROUP,
    SANDBOX_USER,
    hand_to_sandbox_user,
    init_argv,
    located,
    preexec,
    sandbox_ids,
)
from workers.sandbox.jail_init import PROC_SOURCE, SBIN
from workers.sandbox.local import LocalSandbox

NAMESPACES = (
    "unshare", "--user", "--map-root-user", "--mount", "--net", "--pid", "--fork",
    "--kill-child", "--propagation", "private", "--",
)  # fmt: skip
"""The jail's namespaces, made by the worker's own user."""
AS_NOBODY = (
    "setpriv", f"--reuid={SANDBOX_USER}", f"--regid={SANDBOX_GROUP}", "--clear-groups",
    "--pdeathsig=KILL", "--",
)  # fmt: skip
"""Started by root, the rootless jail is made by `nobody`: root's files stay out of reach.
Changing the user clears the parent-death signal the worker set (`jail.py`): it is set
again, so the jail still dies with the worker."""


class UsernsSandbox(LocalSandbox):
    """A workspace at `root`; processes run in a jail built in a user namespace."""

    backend = "userns"
    strength = 1
    summary = "rootless: unprivileged user namespaces"

    @classmethod
    def check(cls) -> None:
        check_userns()

    def prepare(self) -> None:
        """Started by root, give the workspace to `nobody`, who must be able to reach it."""
        self.check()
        if os.geteuid() == 0:
            for path in (self.root, *self.runtime):
                _reachable_by_others(path)
            for path in self.shown:
                _reachable_by_others(path, itself=True)
            hand_to_sandbox_user(self.root)

    def _may_show(self, folder: Path) -> None:
        """Started by root, a folder `nobody` cannot reach is refused."""
        if os.geteuid() == 0:
            _reachable_by_others(folder, itself=True)

    def _argv(self, command: list[str], status_fd: int, limits: Limits) -> list[str]:
        user = (*self._owner_ids(), limits.processes)
        init = init_argv(command, self._jail(), status_fd, user)
        # Full paths: the command's own PATH (`exec`'s `env`) may lack the system's.
        namespaces = [located(NAMESPACES[0]), *NAMESPACES[1:]]
        if os.geteuid() == 0:
            return [located(AS_NOBODY[0]), *AS_NOBODY[1:], *namespaces, *init]
        return [*namespaces, *init]

    def _preexec(self, limits: Limits, group: TreeGroup | None) -> Callable[[], None]:
        return preexec(limits, group, processes=False)

    def _owner_ids(self) -> tuple[int, int]:
        return sandbox_ids() if os.geteuid() == 0 else (os.getuid(), os.getgid())


def _reachable_by_others(path: Path, itself: bool = False) -> None:
    """Refuse a path (the workspace, the interpreter, a folder shown) that `nobody` cannot
    reach: a folder on its way (or, `itself`, the path itself) is closed to others."""
    for folder in [*reversed(path.parents), *([path] if itself else [])]:
        if not os.stat(folder).st_mode & stat.S_IXOTH:
            raise SandboxUnavailable(
                f"the rootless sandbox started by root runs as {SANDBOX_USER}, who cannot "
                f"reach {path} ({folder} is closed to others): open it (chmod o+x) or use "
                "LABRXIV_SANDBOX=jail"
            )


@functools.cache
def check_userns() -> None:
    """Raise `SandboxUnavailable` saying why user namespaces cannot jail lab code here, and
    what to do, in one line."""
    tools = ["unshare", *(["setpriv"] if os.geteuid() == 0 else [])]
    missing = [tool for tool in tools if shutil.which(tool) is None]
    if not any(os.path.exists(f"{folder}/pivot_root") for folder in SBIN):
        missing.append("pivot_root")
    if missing:
        raise SandboxUnavailable(
            f"the rootless sandbox needs {', '.join(missing)} (util-linux): install it"
        )
    if os.geteuid() == 0:
        _reachable_by_others(Path(os.path.realpath(sys.executable)))
    prefix = AS_NOBODY if os.geteuid() == 0 else ()
    probe = subprocess.run(
        [*prefix, *NAMESPACES, "true"], capture_output=True, text=True, check=False
    )
    if probe.returncode != 0:
        raise SandboxUnavailable(userns_refused(probe.stderr.strip()))
    cgroup.probe()  # why a call's tree has no cgroup is said in the sandbox line, not logged
    with tempfile.TemporaryDirectory(prefix="labrxiv-userns-probe-") as folder:
        os.chmod(folder, 0o755)
        box = UsernsSandbox(Path(folder) / "workspace")
        if os.geteuid() == 0:
            hand_to_sandbox_user(box.root)
        try:
            result = box.exec(["true"])
        except SandboxUnavailable as exc:  # the jail could not be built
            raise SandboxUnavailable(jail_refused(str(exc))) from None
        if result.exit_code != 0:
            raise SandboxUnavailable(
                f"the rootless sandbox cannot run a command here: {result.stderr.strip()}"
            )


SYSCTLS = (
    ("kernel.unprivileged_userns_clone", "0", "sysctl -w kernel.unprivileged_userns_clone=1"),
    ("user.max_user_namespaces", "0", "sysctl -w user.max_user_namespaces=15000"),
    (
        "kernel.apparmor_restrict_unprivileged_userns",
        "1",
        "sysctl -w kernel.apparmor_restrict_unprivileged_userns=0 (Ubuntu 24.04's AppArmor "
        "restriction), or an AppArmor profile that lets unshare make them",
    ),
)
"""Kernel settings that turn unprivileged user namespaces off: the setting, its value
when off, and the command (as root) that turns them on."""


def sysctl(name: str) -> str | None:
    """A kernel setting's value (None where this kernel has no such setting)."""
    try:
        return Path("/proc/sys", *name.split(".")).read_text().strip()
    except OSError:
        return None


def userns_refused(said: str) -> str:
    """Why `unshare --user` failed (`said`: its stderr), and what to do, in one line."""
    for name, off, fix in SYSCTLS:
        if sysctl(name) == off:
            return (
                f"unprivileged user namespaces are off here ({name}={off}): as root, run "
                f"`{fix}`, or run labrxiv workers as root (the root jail)"
            )
    return (
        f"unprivileged user namespaces are not permitted here ({said or 'unshare failed'}): "
        "in a container, allow them (e.g. docker run --security-opt seccomp=unconfined "
        "--security-opt apparmor=unconfined --security-opt systempaths=unconfined), or run "
        "labrxiv workers as root (the root jail)"
    )


def jail_refused(said: str) -> str:
    """Why the jail could not be built (`said`), with what to do where the cause is known.

    The kernel refuses a new /proc in a user namespace while the /proc it can see has
    covered paths (the new one would show what they hide), as a Docker container's has:
    user namespaces work there, the jail's /proc does not."""
    said = said.strip()
    if f"mount {PROC_SOURCE} on" in said and os.strerror(errno.EPERM) in said:
        return (
            f"{said}: a new /proc is refused where /proc has masked paths, as in a "
            "container: lift them (docker run --security-opt systempaths=unconfined; "
            "docs/deploy.md), or run labrxiv workers as root (the root jail)"
        )
    return said


BACKEND = UsernsSandbox
