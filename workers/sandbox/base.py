"""The sandbox interface (exec, read, write, list, the workspace's changes) and its results.

Tools, graders and trials use a sandbox through `Sandbox` only; the backends behind it
are found by name in `workers/sandbox/backends/`. Every backend passes
tests/workers/test_sandbox_conformance.py and tests/workers/test_sandbox_escape.py.
Events about sandbox work are emitted by the tool layer that wraps a sandbox, never here.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Literal, Protocol

from events.payloads.tool import LimitHit

if TYPE_CHECKING:
    from workers.tools.look import Snapshot

ViolationKind = Literal[
    "path_traversal", "absolute_path", "symlink_escape", "protected_path", "network"
]


@dataclass(frozen=True)
class Limits:
    """Resource limits of one process tree in the sandbox."""

    wall_seconds: float = 120.0
    """Killed (the whole process group) after this long."""
    cpu_seconds: int = 120
    """RLIMIT_CPU: SIGXCPU past it."""
    memory_bytes: int = 2 * 1024**3
    """RLIMIT_AS: allocations fail past it (MemoryError in Python); also the whole process
    tree's memory, where a cgroup can be made (past it the kernel kills in the tree)."""
    file_bytes: int = 64 * 1024**2
    """RLIMIT_FSIZE: no single file written may grow past it (SIGXFSZ)."""
    output_bytes: int = 256 * 1024
    """stdout+stderr kept; a process printing more than 4x this is killed."""
    processes: int = 256
    """The process tree's tasks (its cgroup's `pids.max`); where no cgroup can be made,
    RLIMIT_NPROC, which counts every process of the sandbox user on the machine."""
    disk_bytes: int = 4 * 1024**3
    """The workspace may not grow past it while a process runs (each file or folder counts
    at least 4 KiB), nor past its size when the process started if that was larger."""


@dataclass(frozen=True)
class ExecResult:
    """What a command did."""

    exit_code: int
    """The process's exit status; negative for a signal."""
    stdout: str
    stderr: str
    duration_s: float
    limit: LimitHit | None = None
    """The limit that stopped it, if one did."""
    truncated: bool = False
    """Output was longer than the limit and was cut."""


class SandboxViolation(Exception):
    """An action tried to leave the workspace or touch what it must not: refused."""

    def __init__(self, kind: ViolationKind, detail: str, path: str = "") -> None:
        super().__init__(detail)
        self.kind: ViolationKind = kind
        self.detail = detail
        self.path = path


class SandboxUnavailable(Exception):
    """This machine cannot isolate processes with the backend asked for; the message says
    why and what to do, in one line."""


class Sandbox(Protocol):
    """A workspace and a way to run processes in it."""

    backend: ClassVar[str]
    """The backend's name (`workers/sandbox/backends/<name>.py`)."""
    root: Path
    """The workspace folder, for the trusted side (the grader, the journal of changes);
    processes in the sandbox reach nothing outside it."""
    limits: Limits
    """The limits a command runs under unless it is given others."""
    loopback: bool
    """Commands get a loopback (127.0.0.1) of the sandbox's own, on which their
    processes reach one another (an agent and the model endpoint it is given on loopback)
    and nothing of the machine's; off (the default), there is no network at all. May be
    set at any time; it holds from the next command."""

    def prepare(self) -> None:
        """Make a new workspace ready for processes (after the starter files are copied
        in); raises `SandboxUnavailable` saying why where none can run here."""

    def exec(
        self,
        argv: list[str],
        limits: Limits | None = None,
        stdin: str = "",
        env: Mapping[str, str] | None = None,
    ) -> ExecResult:
        """Run `argv` with cwd at the root, under `limits`, with no network (but the
        sandbox's own loopback if `loopback`); `env`: variables added to the sandbox's
        fixed environment for this command alone (its `PATH` replaces the default one),
        never the worker's own."""

    def show(self, path: Path) -> None:
        """Show the existing folder `path` (an agent's virtual environment) to processes,
        read-only, at the same path, from the next command on; `ValueError` for what is not
        a folder or holds the workspace, `SandboxUnavailable` where the backend cannot."""

    def read(self, path: str, max_bytes: int | None = None) -> bytes:
        """The content of a workspace file (relative path)."""

    def write(self, path: str, data: bytes) -> None:
        """Create or replace a workspace file (relative path)."""

    def resolve(self, path: str) -> str:
        """The workspace-relative path `path` names once links inside are followed;
        `SandboxViolation` when it leads outside or to what is protected."""

    def files(self) -> list[str]:
        """Every workspace file's relative path, folder by folder with names sorted: a link
        to a file is listed, a link to a folder neither listed nor followed; the sandbox's
        scratch and labrxiv's markers are left out."""

    def look(self) -> "Snapshot":
        """The workspace's state now; two looks say what changed between them."""

    def protected_named(self, text: str) -> str | None:
        """A protected path (grader, hidden data, other workspaces) that `text` names
        outright, if any."""

    def confine_tree(self, path: str) -> None:
        """Refuse (`SandboxViolation`) a workspace folder from which a link leads outside,
        before a reader outside the sandbox (the grader) follows it."""

    def cleanup(self) -> None:
        """Remove the workspace."""
