"""The local sandbox: a workspace folder on this machine and jailed processes in it."""

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO

from workers.sandbox.base import ExecResult, LimitHit, Limits
from workers.sandbox.jail import WORKSPACE_MOUNT, hand_to_sandbox_user, jail_argv, rlimits
from workers.sandbox.paths import confine

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
"""The whole environment a sandboxed process gets: no secrets, no proxies."""


class LocalSandbox:
    """A workspace at `root`; processes run jailed with `hidden` paths covered."""

    def __init__(
        self,
        root: Path,
        hidden: Sequence[Path] = (),
        limits: Limits | None = None,
        python: str | None = None,
    ) -> None:
        self.root = Path(root).resolve()
        self.hidden = [Path(p).resolve() for p in hidden]
        self.limits = limits or Limits()
        self.python = python or _interpreter()
        self.root.mkdir(parents=True, exist_ok=True)

    def prepare(self) -> None:
        """Give the workspace to the sandbox user (after starter files are copied in)."""
        hand_to_sandbox_user(self.root)

    def exec(self, argv: list[str], limits: Limits | None = None, stdin: str = "") -> ExecResult:
        """Run `argv` jailed, in the workspace (seen inside as /mnt/workspace).

        `python` as the first word means this project's interpreter.
        """
        limits = limits or self.limits
        command = [self.python if argv and argv[0] == "python" else argv[0], *argv[1:]]
        env = dict(_ENV, HOME=WORKSPACE_MOUNT, TMPDIR=f"{WORKSPACE_MOUNT}/.tmp")
        (self.root / ".tmp").mkdir(exist_ok=True)
        hand_to_sandbox_user(self.root / ".tmp")
        started = time.monotonic()
        proc = subprocess.Popen(
            jail_argv(command, self.root, self.hidden),
            cwd=self.root,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            preexec_fn=rlimits(limits),
            start_new_session=True,
        )
        capture = _Capture(proc, limits.output_bytes)
        if stdin and proc.stdin:
            try:
                proc.stdin.write(stdin.encode())
            except BrokenPipeError:
                pass
        if proc.stdin:
            proc.stdin.close()
        limit: LimitHit | None = None
        try:
            proc.wait(timeout=limits.wall_seconds)
        except subprocess.TimeoutExpired:
            limit = "time"
            _kill_group(proc)
            proc.wait()
        capture.join()
        proc.wait()
        if capture.flooded:
            limit = "output"
        return ExecResult(
            exit_code=proc.returncode,
            stdout=capture.text("stdout"),
            stderr=capture.text("stderr"),
            duration_s=round(time.monotonic() - started, 3),
            limit=limit or _limit_from(proc.returncode, capture.text("stderr")),
            truncated=capture.truncated,
        )

    def read(self, path: str, max_bytes: int | None = None) -> bytes:
        """A workspace file's bytes (the first `max_bytes` if given)."""
        real = confine(self.root, path, self.hidden)
        with open(real, "rb") as handle:
            return handle.read() if max_bytes is None else handle.read(max_bytes)

    def write(self, path: str, data: bytes) -> None:
        """Create or replace a workspace file, creating its folders."""
        real = confine(self.root, path, self.hidden)
        created = [p for p in reversed(real.parents) if self.root in p.parents and not p.exists()]
        real.parent.mkdir(parents=True, exist_ok=True)
        real.write_bytes(data)
        uid, gid = _owner(self.root)
        for made in [*created, real]:
            os.lchown(made, uid, gid)

    def cleanup(self) -> None:
        """Remove the workspace and everything in it."""
        shutil.rmtree(self.root, ignore_errors=True)


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
    stat = path.stat()
    return stat.st_uid, stat.st_gid


def _interpreter() -> str:
    return sys.executable
