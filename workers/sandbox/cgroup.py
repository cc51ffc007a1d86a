"""A cgroup per jailed process tree: its memory and its process count, summed over the tree.

rlimits bound each process, not a tree: six children of 300 MiB each hold 1.8 GiB under
a 1 GiB address-space limit, and RLIMIT_NPROC counts every `nobody` process of the
machine, so one run's fork bomb would starve the others. A child cgroup of the
worker's own cgroup (cgroup v1 `memory` and `pids` hierarchies, or v2 where the worker's
cgroup delegates those controllers) bounds the tree; the kernel OOM-kills inside it.
When the call ends, what is left of the tree is killed through the cgroup (`cgroup.kill`
under v2) before the cgroup is removed. Where no such cgroup can be made, the sandbox
still runs, bounded per process only (rlimits), and says so in the one line that names
the sandbox at start (`probe`), or else once in the log.

A cgroup is named after the process that made it (`labrxiv-<pid namespace>-<pid>-<random>`)
and removed by it once its tree is gone. A process killed with SIGKILL mid-command
cannot: the first cgroup a process makes sweeps away the empty ones of makers in its
own pid namespace that are no longer alive (`_sweep`), so a worker started again after a
crash cleans up after the one before.
"""

import contextlib
import functools
import logging
import os
import re
import signal
import threading
import time
import uuid
from pathlib import Path

log = logging.getLogger(__name__)

_CONTROLLERS = ("memory", "pids")
_REMOVER = "sandbox cgroup"
"""The name of the threads that remove cgroups (`finish_removals` waits for them)."""
_NAME = re.compile(r"labrxiv-(\d+)-(\d+)-[0-9a-f]{12}")
"""A cgroup this module made: the pid namespace and the id of the process that made it."""


class TreeGroup:
    """One cgroup (v2) or one per controller (v1), made for one process tree."""

    def __init__(self, folders: dict[str, Path]) -> None:
        self.folders = folders
        """The cgroup folder of each controller (the same folder for both under v2)."""
        self._procs = [str(folder / "cgroup.procs") for folder in dict.fromkeys(folders.values())]

    @classmethod
    def create(cls, memory_bytes: int, processes: int) -> "TreeGroup | None":
        """A cgroup limiting a tree to `memory_bytes` and `processes`; None if none can be
        made (logged once, unless `probe` said so first)."""
        made = cls._make(memory_bytes, processes)
        if isinstance(made, str):
            _warn_once(made)
            return None
        return made

    @classmethod
    def _make(cls, memory_bytes: int, processes: int) -> "TreeGroup | str":
        """A cgroup limiting a tree to `memory_bytes` and `processes`, or why none can be made."""
        parents = _parents()
        if parents is None:
            return "no cgroup with the memory and pids controllers is delegated to this user"
        _sweep(parents)
        name = f"labrxiv-{_pid_namespace()}-{os.getpid()}-{uuid.uuid4().hex[:12]}"
        folders = {controller: parent / name for controller, parent in parents.items()}
        group = cls(folders)
        try:
            for folder in dict.fromkeys(folders.values()):
                folder.mkdir()
            memory, pids = folders["memory"], folders["pids"]
            if (memory / "memory.max").exists():  # v2
                (memory / "memory.max").write_text(str(memory_bytes))
                with contextlib.suppress(OSError):
                    (memory / "memory.swap.max").write_text("0")
            else:
                (memory / "memory.limit_in_bytes").write_text(str(memory_bytes))
                with contextlib.suppress(OSError):  # only with swap accounting
                    (memory / "memory.memsw.limit_in_bytes").write_text(str(memory_bytes))
            (pids / "pids.max").write_text(str(processes))
        except OSError as exc:
            group.remove()
            return f"no cgroup can be made for the sandbox ({exc})"
        return group

    def enter(self) -> None:
        """Move the calling process in (from a `preexec_fn`: plain system calls only)."""
        pid = str(os.getpid()).encode()
        for procs in self._procs:
            fd = os.open(procs, os.O_WRONLY)
            try:
                os.write(fd, pid)
            finally:
                os.close(fd)

    def oom_killed(self) -> bool:
        """Whether the kernel killed a process of the tree for memory."""
        folder = self.folders["memory"]
        for name in ("memory.events", "memory.oom_control"):
            try:
                text = (folder / name).read_text()
            except OSError:
                continue
            for line in text.splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill" and value.strip() not in ("", "0"):
                    return True
        return False

    def kill(self) -> None:
        """Kill every process left in the tree: at once through `cgroup.kill` (v2), else
        each one its `cgroup.procs` lists, until none is left. The jail's PID namespace
        already takes its processes with it when its init ends; this makes sure of it
        before the group is removed."""
        for folder in dict.fromkeys(self.folders.values()):
            try:
                fd = os.open(folder / "cgroup.kill", os.O_WRONLY)  # never made: v1 refuses
                try:
                    os.write(fd, b"1")
                finally:
                    os.close(fd)
                continue
            except FileNotFoundError:  # v1, or a v2 kernel before 5.14
                pass
            except OSError as exc:
                log.warning("could not kill the tree of the sandbox cgroup %s: %s", folder, exc)
                continue
            for _ in range(100):
                left = _members(folder)
                if not left:
                    break
                for pid in left:
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(pid, signal.SIGKILL)

    def remove(self) -> None:
        """Delete the cgroup once the kernel lets go of it (tens of ms after its last
        process died), on a thread: the tool call does not wait for it. Not a daemon
        thread: the interpreter's exit waits for it (a daemon one was killed at exit, and
        a command's last tool call left its cgroups on the machine); a process that ends
        with `os._exit` (a Celery pool child) calls `finish_removals` first."""
        threading.Thread(target=self._remove, name=_REMOVER).start()

    def _remove(self) -> None:
        for folder in dict.fromkeys(self.folders.values()):
            if not remove_when_let_go(folder):
                log.warning("could not remove the sandbox cgroup %s", folder)


def _members(folder: Path) -> list[int]:
    """The processes in the cgroup `folder` (none where it is gone)."""
    try:
        return [int(pid) for pid in (folder / "cgroup.procs").read_text().split()]
    except OSError:
        return []


def remove_when_let_go(folder: Path) -> bool:
    """Remove the cgroup `folder` once the kernel lets it go, trying for ~9 s; whether it
    is gone."""
    for attempt in range(40):
        try:
            folder.rmdir()
            return True
        except FileNotFoundError:
            return True
        except OSError:
            time.sleep(min(0.005 * 2**attempt, 0.25))
    return False


def finish_removals() -> None:
    """Wait for the cgroups being removed (a folder is given up after ~9 s of tries;
    under cgroup v1 a group is two folders, removed one after the other)."""
    for thread in threading.enumerate():
        if thread.name == _REMOVER and thread is not threading.current_thread():
            thread.join()


_swept_by: int | None = None
"""The process that swept (a forked child sweeps again: its own first cgroup)."""


def _sweep(parents: dict[str, Path]) -> None:
    """Remove the empty cgroups in `parents` whose maker is no longer alive, once per
    process. Only a dead maker's: a live one may be about to move a process in. One that
    still holds processes (the kernel refuses to remove it) is left for a later sweep."""
    global _swept_by
    if _swept_by == os.getpid():
        return
    _swept_by = os.getpid()
    namespace = _pid_namespace()
    for parent in dict.fromkeys(parents.values()):
        try:
            names = [entry.name for entry in os.scandir(parent) if entry.is_dir()]
        except OSError:
            continue
        for name in names:
            made = _NAME.fullmatch(name)
            # Not this module's, or another pid namespace's (its pid means nothing here),
            # or its maker is alive: left alone.
            if made is None or int(made.group(1)) != namespace or _alive(int(made.group(2))):
                continue
            with contextlib.suppress(OSError):
                (parent / name).rmdir()
                log.info("removed the sandbox cgroup %s left by a process that died", name)


@functools.cache
def _pid_namespace() -> int:
    """The inode of this process's pid namespace (0 where /proc does not say): a pid is
    only a process's name within one namespace, and workers in containers may share a
    parent cgroup (cgroup v1)."""
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return 0


def _alive(pid: int) -> bool:
    """Whether process `pid` exists (in this process's pid namespace)."""
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):  # none, or beyond any pid
        return False
    except PermissionError:  # it exists, as another user
        return True
    return True


def _parents() -> dict[str, Path] | None:
    """Where this process's cgroup of each controller is, if new ones can be made in it."""
    mounts = _cgroup_mounts()
    own = _own_cgroups()
    parents: dict[str, Path] = {}
    for controller in _CONTROLLERS:
        if controller in mounts and controller in own:  # v1
            parents[controller] = mounts[controller] / own[controller].lstrip("/")
        elif "" in mounts and "" in own:  # v2: the controller must be delegated to children
            parent = mounts[""] / own[""].lstrip("/")
            try:
                delegated = (parent / "cgroup.subtree_control").read_text().split()
            except OSError:
                return None
            if controller not in delegated:
                return None
            parents[controller] = parent
        else:
            return None
    if not all(os.access(parent, os.W_OK) for parent in parents.values()):
        return None
    return parents


def _cgroup_mounts() -> dict[str, Path]:
    """Mount points by controller; "" for the v2 hierarchy."""
    mounts: dict[str, Path] = {}
    for line in _own_proc_lines("mountinfo"):
        fields, _, rest = line.partition(" - ")
        parts, extra = fields.split(), rest.split()
        if len(parts) < 5 or len(extra) < 3:
            continue
        fstype, options = extra[0], extra[2].split(",")
        if fstype == "cgroup2":
            mounts.setdefault("", Path(parts[4]))
        elif fstype == "cgroup":
            for controller in _CONTROLLERS:
                if controller in options:
                    mounts.setdefault(controller, Path(parts[4]))
    return mounts


def _own_cgroups() -> dict[str, str]:
    """This process's cgroup path by controller; "" for the v2 hierarchy."""
    own: dict[str, str] = {}
    for line in _own_proc_lines("cgroup"):
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(",") if controllers else [""]:
            own[controller] = path
    return own


def _own_proc_lines(name: str) -> list[str]:
    """The lines of this process's `/proc/self/<name>`; none where it cannot be read."""
    try:
        return Path("/proc/self", name).read_text().splitlines()
    except OSError:
        return []


_warned: set[str] = set()


def probe() -> str | None:
    """Why a call's process tree cannot have a cgroup here (None: it can), for the one
    line that says the sandbox at start; said there, it is not logged again."""
    made = TreeGroup._make(64 * 1024**2, 8)
    if isinstance(made, str):
        _warned.add(made)
        return made
    made.remove()
    return None


def _warn_once(message: str) -> None:
    if message not in _warned:
        _warned.add(message)
        log.warning("%s: a jailed process tree is bounded per process only", message)
