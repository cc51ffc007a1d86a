"""The process jail: a private mount and network namespace, hidden paths, an unprivileged user.

`unshare --mount --net` gives the process no network (not even loopback) and its own
mount table, in which the protected paths (task bundles with graders and hidden
data, the labrxiv data folder) are covered by empty read-only tmpfs mounts. Then
`setpriv` drops to the `nobody` user with no capabilities, so the process cannot
undo those mounts. Limits are rlimits set before exec and inherited.
"""

import functools
import grp
import os
import pwd
import resource
import shutil
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path

from workers.sandbox.base import Limits, SandboxUnavailable

SANDBOX_USER = "nobody"
SANDBOX_GROUP = "nogroup"

WORKSPACE_MOUNT = "/mnt/workspace"
"""Where the workspace appears inside the jail (its real ancestors may be private)."""

# $1 is the workspace: bind it at /mnt/workspace (on a fresh tmpfs over /mnt) and
# enter it; cover each path up to "--" with an empty read-only tmpfs; exec the rest.
_MOUNT_SCRIPT = """
mount -t tmpfs -o size=64k,mode=755 labrxiv-jail /mnt || exit 97
mkdir /mnt/workspace && mount --bind "$1" /mnt/workspace || exit 97
cd /mnt/workspace || exit 97
shift
while [ "$1" != "--" ]; do
  if [ -e "$1" ]; then mount -t tmpfs -o ro,size=4k,mode=000 labrxiv-hidden "$1" || exit 97; fi
  shift
done
shift
exec "$@"
"""


def jail_argv(command: Sequence[str], workspace: Path, hidden: Sequence[Path]) -> list[str]:
    """The argv that runs `command` in the jail, in `workspace`, with `hidden` covered."""
    _check_available()
    return [
        "unshare", "--mount", "--net", "--propagation", "private", "--",
        "sh", "-c", _MOUNT_SCRIPT, "labrxiv-jail", str(workspace), *map(str, hidden), "--",
        "setpriv", f"--reuid={SANDBOX_USER}", f"--regid={SANDBOX_GROUP}", "--clear-groups",
        "--no-new-privs", "--", *command,
    ]  # fmt: skip


def rlimits(limits: Limits) -> Callable[[], None]:
    """A `preexec_fn` that applies `limits` to the child before it execs."""

    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_seconds, limits.cpu_seconds + 5))
        resource.setrlimit(resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes))
        resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_bytes, limits.file_bytes))
        resource.setrlimit(resource.RLIMIT_NPROC, (limits.processes, limits.processes))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    return apply


def hand_to_sandbox_user(path: Path) -> None:
    """Make the workspace writable by the sandbox user (it owns nothing else)."""
    uid, gid = _sandbox_ids()
    os.chown(path, uid, gid)
    for base, dirs, files in os.walk(path):
        for name in dirs + files:
            os.lchown(os.path.join(base, name), uid, gid)


@functools.cache
def _sandbox_ids() -> tuple[int, int]:
    return pwd.getpwnam(SANDBOX_USER).pw_uid, grp.getgrnam(SANDBOX_GROUP).gr_gid


@functools.cache
def _check_available() -> None:
    missing = [tool for tool in ("unshare", "setpriv", "sh") if shutil.which(tool) is None]
    if missing:
        raise SandboxUnavailable(f"sandbox needs {', '.join(missing)} (util-linux) on PATH")
    if os.geteuid() != 0:
        raise SandboxUnavailable(
            "the sandbox isolates processes with mount and network namespaces and an "
            "unprivileged user, which needs root; run labrxiv workers as root "
            "(e.g. in their container)"
        )
    probe = subprocess.run(
        ["unshare", "--mount", "--net", "--propagation", "private", "--", "true"],
        capture_output=True,
        text=True,
        check=False,
    )
    if probe.returncode != 0:
        raise SandboxUnavailable(f"unshare is not permitted here: {probe.stderr.strip()}")
