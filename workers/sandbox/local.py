"""The local sandbox: a workspace folder on this machine and jailed processes in it.

`LocalSandbox` is the root jail (`jail.py`): the `jail` backend. What a backend whose
workspace is a folder of this machine shares (the file operations, the limits' watch,
the capture of output) lives here; a backend changes how a command is wrapped
(`_argv`), what is set before it execs (`_preexec`), who owns the workspace
(`_owner_ids`), which folders it may show (`show`) and how it checks that it works
(`check`).
"""

import errno
import os
import select
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, ClassVar

from workers.sandbox.base import (
    ExecResult,
    LimitHit,
    Limits,
    SandboxUnavailable,
    SandboxViolation,
)
from workers.sandbox.cgroup import TreeGroup
from workers.sandbox.jail import (
    WORKSPACE_MOUNT,
    Jail,
    check_available,
    hand_to_sandbox_user,
    interpreter_folders,
    jail_argv,
    preexec,
    sandbox_ids,
)
from workers.sandbox.jail_init import SETUP_FAILED
from workers.sandbox.paths import confine
from workers.tools.look import SKIPPED_TOP, Snapshot, look

_ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "LANG": "C.UTF-8",
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTHONUNBUFFERED": "1",
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "MPLBACKEND": "Agg",
}
"""The environment every sandboxed process gets: no secrets, no proxies (a command adds
only what its caller gives it: `LocalSandbox.exec`'s `env`)."""

_FILE_FLAGS = os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC
"""Opening a workspace file as root: a FIFO the lab made must not block the worker, and
a link swapped in must not be followed."""


class LocalSandbox:
    """A workspace at `root`; processes run jailed with `hidden` paths covered, on a
    loopback of their own if `loopback`."""

    backend: ClassVar[str] = "jail"
    strength: ClassVar[int] = 2
    """`LABRXIV_SANDBOX=auto` takes the strongest backend that works here."""
    summary: ClassVar[str] = "the root jail: namespaces, the nobody user"

    def __init__(
        self,
        root: Path,
        hidden: Sequence[Path] = (),
        limits: Limits | None = None,
        python: str | None = None,
        loopback: bool = False,
    ) -> None:
        self.root = Path(root).resolve()
        self.hidden = [Path(p).resolve() for p in hidden]
        self.limits = limits or Limits()
        self.python = python or _interpreter()
        self.runtime = interpreter_folders(self.python)
        """Folders the jail shows read-only besides the system: the interpreter's."""
        self.shown: list[Path] = []
        """Further folders the jail shows read-only (`show`)."""
        self.loopback = loopback
        """Processes get a loopback (127.0.0.1) of the jail's own: those of one
        command reach one another, never the machine's; off, there is no network at all."""
        self.root.mkdir(parents=True, exist_ok=True)

    @classmethod
    def check(cls) -> None:
        """Raise `SandboxUnavailable` saying why, in one line, when this backend cannot run
        lab code here."""
        check_available()

    def prepare(self) -> None:
        """Give the workspace to the sandbox user (after starter files are copied in); a
        machine where the sandbox cannot run says why here, not with a failed chown."""
        self.check()
        hand_to_sandbox_user(self.root)

    def show(self, path: Path) -> None:
        """Show the folder `path` (an agent's virtual environment or install folder) to
        processes, read-only, at its own path and at its real one (a link's target);
        programs in it run, nothing in it can be written.

        A folder that holds the workspace is refused (`ValueError`): it holds other runs'
        workspaces too; so is what is not a folder, and (`SandboxUnavailable`) a folder
        the backend's jail cannot reach. A hidden path inside the folder is still covered."""
        given = Path(os.path.abspath(path))
        real = Path(os.path.realpath(given))
        if not real.is_dir():
            raise ValueError(f"cannot show {path}: not a folder")
        if any(folder == self.root or folder in self.root.parents for folder in (given, real)):
            raise ValueError(f"cannot show {path}: it holds the workspace")
        for folder in dict.fromkeys((given, real)):
            self._may_show(folder)
        for folder in dict.fromkeys((given, real)):
            if folder not in self.shown:
                self.shown.append(folder)

    def _may_show(self, folder: Path) -> None:
        """Raise `SandboxUnavailable` where this backend's jail cannot show `folder`."""

    def _readonly(self) -> list[Path]:
        """Every folder the jail shows read-only besides the system."""
        return [*self.runtime, *self.shown]

    def _argv(self, command: list[str], status_fd: int, limits: Limits) -> list[str]:
        """The argv that runs `command` in this backend's jail, under `limits`."""
        return jail_argv(command, self._jail(), status_fd)

    def _jail(self) -> Jail:
        """What this sandbox's jail shows and how its init runs."""
        return Jail(self.root, self.hidden, self._readonly(), self.python, self.loopback)

    def _preexec(self, limits: Limits, group: TreeGroup | None) -> Callable[[], None]:
        """What the jail's first process does before it execs (limits, its cgroup)."""
        return preexec(limits, group)

    def _owner_ids(self) -> tuple[int, int]:
        """The uid and gid that sandboxed processes write the workspace as."""
        return sandbox_ids()

    def exec(
        self,
        argv: list[str],
        limits: Limits | None = None,
        stdin: str = "",
        env: Mapping[str, str] | None = None,
    ) -> ExecResult:
        """Run `argv` jailed, in the workspace (seen inside as /mnt/workspace).

        `python` as the first word means this project's interpreter. `env`: variables
        added to the sandbox's fixed environment for this command (its `PATH` replaces
        the default one).
        """
        limits = limits or self.limits
        command = [self.python if argv and argv[0] == "python" else argv[0], *argv[1:]]
        self._workspace_tmp()
        disk = _DiskWatch(self.root, limits.disk_bytes)
        group = TreeGroup.create(limits.memory_bytes, limits.processes)
        status_read, status_write = os.pipe()
        started = time.monotonic()
        try:
            proc = subprocess.Popen(
                self._argv(command, status_write, limits),
                cwd=self.root,
                env=self._environment(env or {}),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                preexec_fn=self._preexec(limits, group),
                start_new_session=True,
                pass_fds=(status_write,),
            )
        except BaseException:
            os.close(status_read)
            if group:
                group.remove()
            raise
        finally:
            os.close(status_write)
        capture = _Capture(proc, limits.output_bytes)
        _feed(proc, stdin)
        try:
            limit, status = self._wait(proc, status_read, started + limits.wall_seconds, disk)
        finally:
            os.close(status_read)
        capture.join()
        oom = group.oom_killed() if group else False
        if group:
            group.kill()
            group.remove()
        if not status and proc.returncode == SETUP_FAILED:
            raise SandboxUnavailable(f"the jail could not be built: {capture.text('stderr')}")
        code = os.waitstatus_to_exitcode(int(status)) if status else proc.returncode
        stderr = capture.text("stderr")
        if capture.flooded:
            limit = "output"
        elif not limit:
            limit = "memory" if oom and code else _limit_from(code, stderr)
        return ExecResult(
            exit_code=code,
            stdout=capture.text("stdout"),
            stderr=stderr,
            duration_s=round(time.monotonic() - started, 3),
            limit=limit,
            truncated=capture.truncated,
        )

    def _environment(self, extra: Mapping[str, str]) -> dict[str, str]:
        """The environment of one command: the fixed one, then `extra`."""
        return {
            **_ENV,
            # `python` in a shell is the project's interpreter, as for the python tool: a
            # lab running `python solution.py` from bash found no python (or the
            # system's, without numpy).
            "PATH": f"{Path(self.python).parent}:{_ENV['PATH']}",
            "HOME": WORKSPACE_MOUNT,
            "TMPDIR": f"{WORKSPACE_MOUNT}/.tmp",
            **extra,
        }

    def _wait(
        self, proc: subprocess.Popen[bytes], status_fd: int, deadline: float, disk: "_DiskWatch"
    ) -> tuple[LimitHit | None, bytes]:
        """Wait for the jail and read the command's wait status from `status_fd`; stop the
        jail at the deadline or when the workspace outgrows its cap.

        The status pipe reaches its end when the jail has exited, so waiting on it wakes
        at once (polling the process cost ~50 ms a call).
        """
        status = b""
        while True:
            timeout = max(0.0, min(0.1, deadline - time.monotonic()))
            if select.select([status_fd], [], [], timeout)[0]:
                chunk = os.read(status_fd, 64)
                status += chunk
                if chunk:
                    continue
                proc.wait()
                return None, status
            limit: LimitHit | None = None
            if time.monotonic() >= deadline:
                limit = "time"
            elif disk.over():
                limit = "disk"
            if limit:
                _kill_group(proc)
                proc.wait()
                return limit, status

    def _workspace_tmp(self) -> None:
        """Make the workspace's `.tmp` (the jail's TMPDIR) a plain folder of the sandbox user.

        A lab could make it a symlink, and root would then chown whatever it points at to
        the sandbox user, /etc or a grader included. A symlink there is removed and
        refused when it pointed outside the workspace.
        """
        tmp = self.root / ".tmp"
        if tmp.is_symlink():
            target = os.readlink(tmp)
            tmp.unlink()
            try:
                confine(self.root, os.path.relpath(os.path.join(self.root, target), self.root))
            except SandboxViolation:
                raise SandboxViolation(
                    "symlink_escape",
                    f".tmp was a symlink to {target}, outside the workspace",
                    ".tmp",
                ) from None
        elif tmp.exists() and not tmp.is_dir():
            tmp.unlink()
        tmp.mkdir(exist_ok=True)
        uid, gid = self._owner_ids()
        os.chown(tmp, uid, gid, follow_symlinks=False)

    def read(self, path: str, max_bytes: int | None = None) -> bytes:
        """A workspace file's bytes (the first `max_bytes` if given)."""
        real = confine(self.root, path, self.hidden)
        fd = os.open(real, os.O_RDONLY | _FILE_FLAGS)
        with os.fdopen(fd, "rb") as handle:
            _regular(fd, path)
            return handle.read() if max_bytes is None else handle.read(max_bytes)

    def write(self, path: str, data: bytes) -> None:
        """Create or replace a workspace file, creating its folders."""
        real = confine(self.root, path, self.hidden)
        created = [p for p in reversed(real.parents) if self.root in p.parents and not p.exists()]
        real.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(real, os.O_WRONLY | os.O_CREAT | _FILE_FLAGS, 0o644)
        with os.fdopen(fd, "wb") as handle:
            _regular(fd, path)
            os.ftruncate(fd, 0)
            handle.write(data)
        uid, gid = _owner(self.root)
        for made in [*created, real]:
            os.lchown(made, uid, gid)

    def resolve(self, path: str) -> str:
        """The workspace-relative path `path` names once links inside are followed."""
        return os.path.relpath(confine(self.root, path, self.hidden), self.root)

    def files(self) -> list[str]:
        """Every workspace file's relative path, folder by folder with names sorted: a link
        to a file is listed, a link to a folder neither listed nor followed; the jail's
        scratch and labrxiv's markers are left out."""
        found = []
        for base, dirs, names in os.walk(self.root):
            if base == str(self.root):
                dirs[:] = [d for d in dirs if not d.startswith(SKIPPED_TOP)]
                names = [n for n in names if not n.startswith(SKIPPED_TOP)]
            dirs.sort()  # walked in name order: the same workspace lists the same way
            for name in sorted(names):
                found.append(os.path.relpath(os.path.join(base, name), self.root))
        return found

    def look(self) -> Snapshot:
        """The workspace's state now, hidden paths never entered (`workers.tools.look`)."""
        return look(self.root, self.hidden)

    def protected_named(self, text: str) -> str | None:
        """A hidden path that `text` names outright, if any."""
        return next((str(path) for path in self.hidden if str(path) in text), None)

    def confine_tree(self, path: str) -> None:
        """Refuse (`SandboxViolation`) a workspace folder from which a link leads outside.

        For a reader outside the jail (the trusted grader runs as root and follows
        links): a solution that makes `outputs` a symlink to another run's outputs would
        be graded on them.
        """
        top = confine(self.root, path, self.hidden)
        if not top.is_dir():
            return
        for base, dirs, files in os.walk(top):
            for name in dirs + files:
                full = os.path.join(base, name)
                if os.path.islink(full):
                    confine(self.root, os.path.relpath(full, self.root), self.hidden)

    def cleanup(self) -> None:
        """Remove the workspace and everything in it."""
        shutil.rmtree(self.root, ignore_errors=True)


class _DiskWatch:
    """Whether a workspace has outgrown its cap, asked ten times a second while a process runs.

    The cap is the disk limit, or the workspace's size when the process started if that
    was larger. Measuring a workspace means walking it, which takes a while for many
    files; so each time, the filesystem's own counters (one `statvfs`) say how much was
    taken on it since the start, and the workspace is walked when that would put it past
    its cap, and every 0.25 s anyway (the counters also move with others' writes and
    deletions), but never sooner than three times the last walk's duration after it (a
    quarter of a core at most while a command runs). A process outgrows the cap by
    what it writes until the walk after it crossed it ends: tens of MiB for big files.
    A walk stops as soon as it has counted past the cap, so it never reads more than the
    cap's worth of entries (16,384 at 64 MiB): a flood of empty files once made each walk
    as long as the flood itself, and the wait between walks three times that, and under
    load a workspace reached 613 MiB of a 64 MiB cap (the escape suite, a fresh run on a
    busy machine); bounded walks catch it within a walk of a cap's worth of entries.
    """

    def __init__(self, root: Path, limit: int) -> None:
        self.root = root
        began = time.monotonic()
        self.start = workspace_usage(root)
        self.walked = time.monotonic()
        self.walk_cost = self.walked - began
        self.cap = max(limit, self.start)
        self.fs_start = _filesystem_used(root)

    def over(self) -> bool:
        now = time.monotonic()
        estimate = self.start + _filesystem_used(self.root) - self.fs_start
        if now - self.walked < max(0.25, 3 * self.walk_cost) and (
            estimate <= self.cap or now - self.walked < 3 * self.walk_cost
        ):
            return False
        used = workspace_usage(self.root, above=self.cap)
        self.walked, self.walk_cost = time.monotonic(), time.monotonic() - now
        return used > self.cap


def _filesystem_used(path: Path) -> int:
    """Bytes taken on `path`'s filesystem, each inode counted 4 KiB as `workspace_usage` does."""
    info = os.statvfs(path)
    return (info.f_blocks - info.f_bfree) * info.f_frsize + (info.f_files - info.f_ffree) * 4096


def workspace_usage(root: Path, above: int | None = None) -> int:
    """Bytes a workspace takes on disk, each file or folder counted at least 4 KiB; given
    `above`, the walk stops once the count passes it (the total is then only known to be
    more than `above`)."""
    total = 0
    stack = [str(root)]
    while stack:
        try:
            folder = os.scandir(stack.pop())
        except OSError:
            continue
        with folder:  # read lazily: a walk that stops early reads no more of the folder
            for entry in _entries(folder):
                try:
                    info = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                total += max(info.st_blocks * 512, 4096)
                if above is not None and total > above:
                    return total
                if stat.S_ISDIR(info.st_mode):
                    stack.append(entry.path)
    return total


def _entries(folder: Iterator[os.DirEntry[str]]) -> Iterator[os.DirEntry[str]]:
    """A folder's entries until reading it fails (a folder removed meanwhile)."""
    try:
        yield from folder
    except OSError:
        return


def _regular(fd: int, path: str) -> None:
    mode = os.fstat(fd).st_mode
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
    if not stat.S_ISREG(mode):
        raise OSError(errno.EINVAL, "not a regular file (a FIFO, socket or device)", path)


def _feed(proc: subprocess.Popen[bytes], stdin: str) -> None:
    if stdin and proc.stdin:
        try:
            proc.stdin.write(stdin.encode())
        except BrokenPipeError:
            pass
    if proc.stdin:
        proc.stdin.close()


class _Capture:
    """Reads stdout and stderr on threads, keeping the first bytes of each."""

    def __init__(self, proc: subprocess.Popen[bytes], keep: int) -> None:
        self.keep = keep
        self.parts: dict[str, bytearray] = {"stdout": bytearray(), "stderr": bytearray()}
        self.total = 0
        self.truncated = False
        self.flooded = False
        self._proc = proc
        self._lock = threading.Lock()
        self._threads = [
            threading.Thread(target=self._pump, args=(name, stream), daemon=True)
            for name, stream in (("stdout", proc.stdout), ("stderr", proc.stderr))
        ]
        for thread in self._threads:
            thread.start()

    def _pump(self, name: str, stream: IO[bytes] | None) -> None:
        if stream is None:
            return
        for chunk in iter(lambda: stream.read(65536), b""):
            with self._lock:
                self.total += len(chunk)
                room = self.keep - len(self.parts[name])
                if room > 0:
                    self.parts[name] += chunk[:room]
                if len(chunk) > room:
                    self.truncated = True
                if self.total > 4 * self.keep and not self.flooded:
                    self.flooded = True
                    _kill_group(self._proc)

    def join(self) -> None:
        for thread in self._threads:
            thread.join()

    def text(self, name: str) -> str:
        return self.parts[name].decode("utf-8", errors="replace")


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _limit_from(code: int | None, stderr: str) -> LimitHit | None:
    if code == -signal.SIGXCPU:
        return "cpu"
    if code == -signal.SIGXFSZ or (code and "File too large" in stderr):
        return "file_size"  # Python ignores SIGXFSZ: the write fails with EFBIG instead
    if code and ("MemoryError" in stderr or "Cannot allocate memory" in stderr):
        return "memory"
    return None


def _owner(path: Path) -> tuple[int, int]:
    info = path.stat()
    return info.st_uid, info.st_gid


def _interpreter() -> str:
    return sys.executable
