"""The sandbox escape suite: a catalogue of attempts from lab code, each refused or contained.

Every attempt runs on every sandbox backend (the root jail as root, the rootless one as
a normal user: run as root, the suite runs itself again as one for it,
`test_the_rootless_backend_passes_as_a_normal_user`), through the tool path a lab uses
(`invoke`, with a `ToolEnv` from `LabServices.env_for` as `labrxiv.wiring` builds it
for a worker) in a fresh run of its own. The test id reads as the backend, the attempt
and the outcome it must have, e.g. `jail-symlink-to-grader=refused:protected_path` or
`userns-fork-bomb=stopped:time`, so `pytest -v` lists every attempt with its outcome;
a failure names the attempt and what got out.

After every attempt, whatever it was, the suite checks that:
- no secret appeared in any event payload, blob or output: the worker's environment
  (`OPENAI_API_KEY`…), a file in the data folder, another run's workspace, and the
  task's hidden data and grader (by digest and by base64, as an attack prints them);
- the host is unharmed: the grader and hidden data are unchanged, nothing was written
  outside the workspace (a world-writable folder, /tmp, /var/tmp, /dev/shm), a
  folder of the worker's is still the worker's, the worker answered within the attempt's bound,
  can still start processes, and no process of the sandbox user is left behind;
- an attempt by path (a tool argument or a command naming a hidden path, `..`, an
  absolute path, a symlink) left an `integrity.violation` of the expected kind, and a
  resource attack was stopped by the expected limit.

The data folder lives in a world-traversable folder and the secrets are world-readable,
so it is the sandbox, not file permissions, that keeps them out of reach.
"""

import base64
import hashlib
import os
import pwd
import select
import shutil
import signal
import socket
import subprocess
import sysconfig
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from events import Event
from events.ids import new_id, utcnow
from events.payloads import RunStarted
from labrxiv.settings import load_settings
from labrxiv.wiring import Embedded, open_embedded
from runstate import fold
from tests.needs import missing
from tests.unprivileged import rootless_pass_as_normal_user, usable
from workers.gym.grading import protected_digests
from workers.sandbox.backends import backend_names
from workers.sandbox.base import Limits
from workers.sandbox.cgroup import TreeGroup
from workers.tools.env import ToolEnv
from workers.tools.invoke import Invocation, invoke

REPO = Path(__file__).resolve().parents[2]
TASK = "continual-digits"
MiB = 1024**2
LIMITS = Limits(
    wall_seconds=30,
    cpu_seconds=30,
    memory_bytes=1024 * MiB,
    file_bytes=16 * MiB,
    output_bytes=64 * 1024,
    processes=256,
    disk_bytes=64 * MiB,
)
"""The worker's sandbox limits in this suite (the tools set wall and CPU time per call)."""
SECRETS = {
    "OPENAI_API_KEY": f"sk-canary-{uuid.uuid4().hex}",
    "AWS_SECRET_ACCESS_KEY": f"canary-aws-{uuid.uuid4().hex}",
    "GITHUB_TOKEN": f"canary-gh-{uuid.uuid4().hex}",
}
"""Put in the worker's environment for the whole module; lab code must never see them."""
MARKER = f"lx-pwned-{uuid.uuid4().hex[:10]}"
"""The name attacks give files they try to write outside the workspace."""
SHARED_TMP = (Path("/tmp"), Path("/var/tmp"), Path("/dev/shm"))


# The world the attacks run in.


@dataclass
class Lab:
    """A worker's lab services with a victim run beside, secrets and traps around it."""

    system: Embedded
    base: Path
    """A world-traversable folder holding the data folder and the traps."""
    gym: Path
    hidden_files: list[Path]
    """The task bundles' grader and hidden files: nothing of them may come out."""
    protected_before: dict[str, dict[str, str]]
    victim: ToolEnv
    outside: Path
    """A world-writable folder outside every workspace (like /tmp)."""
    rootdir: Path
    """A folder of the worker's user with a file: nothing may make it the sandbox user's."""
    listeners: dict[str, socket.socket]
    etc_passwd: str = ""
    """The sha256 of /etc/passwd before the attempts."""
    owners: dict[Path, int] = field(default_factory=dict)
    """Who owns the worker's folders before the attempts (the worker's user)."""
    tree_memory: bool = True
    """Whether a process tree's memory is bounded as a whole (a cgroup can be made here);
    else each process is, by its rlimit."""
    canaries: dict[str, str] = field(default_factory=dict)
    """What must never come out, by what it is."""
    runs: int = 0

    @property
    def data(self) -> Path:
        return self.base / "data"

    def new_env(self) -> ToolEnv:
        """A fresh attacker run, as a lab step gets it."""
        self.runs += 1
        return _env(self.system, f"run-attacker-{self.runs}-{uuid.uuid4().hex[:8]}")

    def placeholders(self, env: ToolEnv) -> dict[str, str]:
        hidden = self.gym / TASK / "hidden" / "test_labels.npz"
        grader = self.gym / TASK / "grader" / "grade.py"
        paths = {
            "gym": self.gym,
            "hidden": hidden,
            "grader": grader,
            "data": self.data,
            "victim": self.victim.sandbox.root,
        }
        values = {name: str(path) for name, path in paths.items()}
        for name, path in paths.items():
            text = str(path)
            values[f"{name}_sh"] = f"{text[0]}''{text[1:]}"  # the same path, not spelt out
            values[f"{name}_py"] = f"({text[:1]!r} + {text[1:]!r})"
        values.update(
            hidden_rel=os.path.relpath(hidden, env.sandbox.root),
            grader_rel=os.path.relpath(grader, env.sandbox.root),
            victim_rel=os.path.relpath(self.victim.sandbox.root, env.sandbox.root),
            outside=str(self.outside),
            rootdir=str(self.rootdir),
            repo=str(REPO),
            purelib=sysconfig.get_paths()["purelib"],
            stdlib=sysconfig.get_paths()["stdlib"],
            worker=str(os.getpid()),
            marker=MARKER,
            port=str(self.listeners["tcp"].getsockname()[1]),
            unix=str(self.listeners["unix"].getsockname()),
            abstract=self.listeners["abstract"].getsockname()[1:].decode(),
        )
        return values


def _env(system: Embedded, stream: str) -> ToolEnv:
    started = RunStarted(task=TASK, lab=stream.removeprefix("run-"), policy="search")
    event = Event(id=new_id(), stream=stream, version=0, occurred_at=utcnow(), payload=started)
    return system.ctx.labs.env_for(fold([event]))


def _canaries(lab: Lab) -> dict[str, str]:
    found = {f"env {name}": value for name, value in SECRETS.items()}
    found["data folder secret"] = (lab.data / "secret.txt").read_text()
    found["other run's file"] = (lab.victim.sandbox.root / "victim.txt").read_text()
    for path in lab.hidden_files:
        data = path.read_bytes()
        name = str(path.relative_to(lab.gym))
        found[f"{name} (sha256)"] = hashlib.sha256(data).hexdigest()
        if len(data) >= 60:
            found[f"{name} (base64)"] = base64.b64encode(data[:60]).decode()
    return found


def _listeners(base: Path) -> dict[str, socket.socket]:
    """A TCP port on loopback, a Unix socket any user may connect to, an abstract socket."""
    tcp = socket.socket()
    tcp.bind(("127.0.0.1", 0))
    unix = socket.socket(socket.AF_UNIX)
    unix.bind(str(base / "outside" / "host.sock"))
    os.chmod(base / "outside" / "host.sock", 0o777)
    abstract = socket.socket(socket.AF_UNIX)
    abstract.bind(f"\0labrxiv-escape-{uuid.uuid4().hex[:8]}".encode())
    for listener in (tcp, unix, abstract):
        listener.listen(8)
        listener.setblocking(False)
    return {"tcp": tcp, "unix": unix, "abstract": abstract}


@pytest.fixture(scope="module", params=backend_names())
def lab(request: pytest.FixtureRequest) -> Iterator[Lab]:
    """The world of the attempts, its worker's sandbox of each backend in turn."""
    backend = usable(request.param).backend
    saved = {name: os.environ.get(name) for name in SECRETS}
    os.environ.update(SECRETS)
    # Not pytest's tmp_path: its parents are private to root, which would hide the data
    # folder from the sandbox user whatever the sandbox does.
    base = Path(tempfile.mkdtemp(prefix="labrxiv-escape-", dir="/tmp"))
    os.chmod(base, 0o755)
    (base / "outside").mkdir(mode=0o777)
    os.chmod(base / "outside", 0o1777)
    (base / "rootdir").mkdir(mode=0o755)
    (base / "rootdir" / "precious.txt").write_text("root's own\n")
    (base / "outside" / "bait.txt").write_text("bait\n")
    os.chmod(base / "outside" / "bait.txt", 0o666)
    system = open_embedded(load_settings(data_dir=base / "data"), threads=1)
    listeners = _listeners(base)
    try:
        system.ctx.labs.limits = LIMITS
        system.ctx.labs.sandbox = backend
        (base / "data" / "secret.txt").write_text(f"canary-datadir-{uuid.uuid4().hex}\n")
        os.chmod(base / "data", 0o755)
        victim = _env(system, f"run-victim-{uuid.uuid4().hex[:8]}")
        _plant_victim(victim, system.ctx.labs.gym_dirs[0])
        gym = system.ctx.labs.gym_dirs[0]
        hidden_files = sorted(
            path
            for folder in ("hidden", "grader")
            for path in gym.glob(f"*/{folder}/**/*")
            if path.is_file() and "__pycache__" not in path.parts
        )
        world = Lab(
            system=system,
            base=base,
            gym=gym,
            hidden_files=hidden_files,
            protected_before={b.name: protected_digests(b) for b in gym.iterdir() if b.is_dir()},
            victim=victim,
            outside=base / "outside",
            rootdir=base / "rootdir",
            listeners=listeners,
        )
        world.canaries = _canaries(world)
        world.owners = {
            path: path.stat().st_uid
            for path in (world.rootdir, world.rootdir / "precious.txt", gym, world.data)
        }
        group = TreeGroup.create(64 * MiB, 8)
        world.tree_memory = group is not None
        if group is not None:
            group.remove()
        world.etc_passwd = hashlib.sha256(Path("/etc/passwd").read_bytes()).hexdigest()
        yield world
    finally:
        for listener in listeners.values():
            listener.close()
        system.close()
        shutil.rmtree(base, ignore_errors=True)
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _plant_victim(victim: ToolEnv, gym: Path) -> None:
    """Another run's workspace: a secret file, and outputs that would score perfectly."""
    root = victim.sandbox.root
    (root / "victim.txt").write_text(f"canary-victim-{uuid.uuid4().hex}\n")
    labels = np.load(gym / TASK / "hidden" / "test_labels.npz")["y_test"].astype(np.int64)
    (root / "outputs").mkdir(exist_ok=True)
    for k in range(1, 6):
        np.save(root / "outputs" / f"predictions_after_task_{k}.npy", labels)
    victim.sandbox.prepare()


# The catalogue.


Step = tuple[str, dict[str, Any]]
Check = Callable[[Lab, ToolEnv, list[Invocation]], list[str]]
"""Further checks of one attempt: what escaped, in words (empty: nothing)."""


@dataclass(frozen=True)
class Attempt:
    """One thing lab code may try, and what must come of it."""

    name: str
    kind: str
    """The class of attempt (`ATTEMPT_CLASSES`)."""
    steps: tuple[Step, ...]
    outcome: str
    """`refused` (with an integrity.violation), `contained` or `stopped` (by a limit)."""
    violation: str | None = None
    """The integrity.violation kind that must be among the attempt's events."""
    limit: str | None = None
    """The sandbox limit that must have stopped the last step."""
    bound_s: float = 15.0
    """The attempt, every step included, answers within this many seconds."""
    check: Check | None = None
    beside_victim: bool = False
    """A process of the other run runs while the attempt does."""
    watch_memory: bool = False
    """Sample the sandbox's resident memory while the attempt runs."""
    slow: bool = False

    @property
    def id(self) -> str:
        detail = self.violation or self.limit
        return f"{self.name}={self.outcome}" + (f":{detail}" if detail else "")


def refused(name: str, kind: str, violation: str, *steps: Step, **options: Any) -> Attempt:
    """Refused before anything ran, and recorded as an integrity.violation of `violation`."""
    return Attempt(name, kind, steps, "refused", violation=violation, **options)


def contained(name: str, kind: str, *steps: Step, **options: Any) -> Attempt:
    """Ran, and reached nothing it must not (the attempt cannot always be told from a
    mistake, e.g. a path spelt so that no tool sees which it is: no violation required)."""
    return Attempt(name, kind, steps, "contained", **options)


def stopped(name: str, kind: str, limit: str, *steps: Step, **options: Any) -> Attempt:
    """Ran, and was stopped by the sandbox limit `limit`."""
    return Attempt(name, kind, steps, "stopped", limit=limit, **options)


def bash(command: str, timeout_s: float = 10) -> Step:
    return ("bash", {"command": command, "timeout_s": timeout_s})


def python(code: str, timeout_s: float = 10) -> Step:
    return ("python", {"code": code, "timeout_s": timeout_s})


def tool(name: str, **args: Any) -> Step:
    return (name, args)


def nothing_at(*relatives: str) -> Check:
    """Files the attack tried to write outside the workspace (under the suite's folder)."""

    def check(lab: Lab, env: ToolEnv, _: list[Invocation]) -> list[str]:
        return [f"{lab.base / r} was written" for r in relatives if (lab.base / r).exists()]

    return check


def not_created(*paths: str, planted: bytes | None = None) -> Check:
    """No file of `paths` exists after the attempt; with `planted`, none holds what the
    attempt wrote (for paths that may exist beforehand: Debian's Python ships a
    `sitecustomize.py` in its standard library)."""

    def check(lab: Lab, env: ToolEnv, _: list[Invocation]) -> list[str]:
        made = [Path(_fill(path, lab.placeholders(env))) for path in paths]
        return [
            f"{path} was written"
            for path in made
            if path.exists() and (planted is None or path.read_bytes() == planted)
        ]

    return check


def no_score(lab: Lab, env: ToolEnv, invocations: list[Invocation]) -> list[str]:
    payloads = [p for outcome in invocations for p in outcome.payloads]
    scored = [p.score for p in payloads if p.type == "experiment.scored"]  # type: ignore[attr-defined]
    return [f"outputs from outside the workspace were graded: scores {scored}"] if scored else []


def no_root(lab: Lab, env: ToolEnv, invocations: list[Invocation]) -> list[str]:
    text = "\n".join(outcome.output for outcome in invocations)
    return ["a process ran as root"] if "uid=0(" in text else []


def passwd_unchanged(lab: Lab, env: ToolEnv, _: list[Invocation]) -> list[str]:
    now = hashlib.sha256(Path("/etc/passwd").read_bytes()).hexdigest()
    return ["/etc/passwd was written"] if now != lab.etc_passwd else []


def within_the_disk_bound(lab: Lab, env: ToolEnv, _: list[Invocation]) -> list[str]:
    """The disk limit is checked while a process runs, by walking the workspace: it may be
    overshot by what the process writes meanwhile. A walk stops once past the limit, so it
    never reads more than a limit's worth of entries: 65-93 MiB of 64 for a flood of
    empty files, also with three CPU hogs on two cores (it reached 613 MiB when walks read
    every entry). Bounded at 4x."""
    used = _disk_usage(env.sandbox.root)
    if used > 4 * LIMITS.disk_bytes:
        return [f"the workspace holds {used / MiB:.0f} MiB, limit {LIMITS.disk_bytes / MiB:.0f}"]
    return []


READ_BY_HIDDEN_SPELLING = (
    "for p in {hidden_sh} {grader_sh} {data_sh}/secret.txt {victim_sh}/victim.txt; do "
    "sha256sum $p; base64 -w0 $p; cat $p; done"
)
"""Reads every secret by its path, spelt so that no tool can see which path it is."""
READ_BY_HIDDEN_SPELLING_PY = (
    "import base64, hashlib\n"
    "for p in [{hidden_py}, {grader_py}, {data_py} + '/secret.txt', {victim_py} + '/victim.txt']:\n"
    "    try:\n"
    "        b = open(p, 'rb').read()\n"
    "        print(hashlib.sha256(b).hexdigest(), base64.b64encode(b).decode(), b)\n"
    "    except OSError as exc:\n"
    "        print(p, exc)\n"
)
EVERY_PROCESS_ROOT = (
    "for p in /proc/[0-9]*; do cat $p/root{data_sh}/secret.txt $p/root{hidden_sh} "
    "$p/root{victim_sh}/victim.txt $p/cwd/victim.txt 2>/dev/null; done; true"
)
GIT_HISTORY = (
    "printf '[safe]\\n\\tdirectory = *\\n' > ~/.gitconfig; "
    "for f in hidden/test_labels.npz grader/grade.py; do "
    f"git -C {{repo}} show HEAD:gym/{TASK}/$f | base64 -w0; "
    f"git -C {{repo}} show HEAD:gym/{TASK}/$f | sha256sum; done; ls {{repo}} {{repo}}/.git"
)
SOLUTION_LINKS_OUTPUTS = (
    "import os, shutil\nshutil.rmtree('outputs', ignore_errors=True)\n"
    "os.symlink('{victim}/outputs', 'outputs')\n"
)
SOLUTION_LINKS_OUTPUT_FILES = (
    "import os\nos.makedirs('outputs', exist_ok=True)\nfor k in range(1, 6):\n"
    "    name = 'outputs/predictions_after_task_%d.npy' % k\n"
    "    os.symlink('{victim}/' + name, name)\n"
)
CONNECT_UNIX = (
    "import socket\ns = socket.socket(socket.AF_UNIX)\ns.connect({address}); s.sendall(b'hi')"
)
FORK_FOREVER = (
    "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"
)
FORK_NEW_SESSIONS = (
    "import os, time\nfor _ in range(40):\n    try:\n        if os.fork() == 0:\n"
    "            os.setsid(); time.sleep(600); os._exit(0)\n    except OSError:\n        pass\n"
)
MEMORY_OVER_PROCESSES = (
    "import os, time\nkids = []\nfor _ in range(6):\n    pid = os.fork()\n    if pid == 0:\n"
    "        try:\n            block = b'x' * (300 * 1024**2)\n"
    "            print('held', flush=True); time.sleep(3)\n"
    "        except MemoryError:\n            print('denied', flush=True)\n"
    "        os._exit(0)\n    kids.append(pid)\nfor pid in kids:\n    os.waitpid(pid, 0)\n"
)
UNCOVER_IN_USER_NAMESPACE = (
    "unshare -Urm sh -c 'umount -l {gym_sh}; umount -l {data_sh}; id; "
    "base64 -w0 {hidden_sh}; cat {data_sh}/secret.txt'; true"
)

CATALOGUE: list[Attempt] = [
    # Hidden and grader paths by `..`, through the file tools.
    refused("dotdot-to-hidden", "dotdot", "path_traversal", tool("read_file", path="{hidden_rel}")),
    refused(
        "dotdot-write-grader",
        "dotdot",
        "path_traversal",
        tool("write_file", path="{grader_rel}", content="SCORES = 1.0"),
    ),
    refused(
        "dotdot-inside-a-path",
        "dotdot",
        "path_traversal",
        tool("apply_patch", path="data/../../../x/../{grader_rel}", old="a", new="b"),
    ),
    refused(
        "nul-byte-in-path",
        "dotdot",
        "path_traversal",
        tool("read_file", path="config.json\x00/../../secret.txt"),
    ),
    # Absolute paths, and commands naming a hidden path outright or spelling it otherwise.
    refused("absolute-hidden", "absolute", "absolute_path", tool("read_file", path="{hidden}")),
    refused(
        "absolute-write-grader",
        "absolute",
        "absolute_path",
        tool("write_file", path="{grader}", content="SCORES = 1.0"),
    ),
    refused("bash-names-hidden", "absolute", "protected_path", bash("base64 -w0 {hidden}")),
    refused(
        "python-names-grader",
        "absolute",
        "protected_path",
        python("open('{grader}', 'a').write('# pwned')"),
    ),
    contained("bash-reads-secrets-by-hidden-spelling", "absolute", bash(READ_BY_HIDDEN_SPELLING)),
    contained(
        "python-reads-secrets-by-hidden-spelling", "absolute", python(READ_BY_HIDDEN_SPELLING_PY)
    ),
    # Symlinks made by lab code, then followed by the worker's own (root) tools.
    refused(
        "symlink-to-hidden",
        "symlink",
        "protected_path",
        bash("ln -s {hidden_sh} labels.npz"),
        tool("read_file", path="labels.npz"),
    ),
    refused(
        "symlink-to-grader",
        "symlink",
        "protected_path",
        bash("ln -s {grader_sh} grade.py"),
        tool("apply_patch", path="grade.py", old="import", new="import os; import"),
    ),
    refused(
        "symlink-dir-to-grader-write",
        "symlink",
        "protected_path",
        bash(f"ln -s {{gym_sh}}/{TASK}/grader g"),
        tool("write_file", path="g/grade.py", content="print('{\"scores\": 1}')"),
    ),
    refused(
        "symlink-to-data-folder",
        "symlink",
        "symlink_escape",
        bash("ln -s {data_sh} d"),
        tool("read_file", path="d/secret.txt"),
    ),
    refused(
        "symlink-chain-to-outside",
        "symlink",
        "symlink_escape",
        bash("ln -s {outside} far && ln -s far near && ln -s near/../rootdir/precious.txt p"),
        tool("read_file", path="p"),
        tool("write_file", path="near/chain.txt", content="x"),
        check=nothing_at("outside/chain.txt"),
    ),
    refused(
        "symlink-found-by-search-files",
        "symlink",
        "protected_path",
        bash("ln -s {hidden_sh} labels.npz"),
        tool("search_files", pattern="."),
    ),
    contained(
        "symlink-dir-found-by-search-files",
        "symlink",
        bash("ln -s {gym_sh} gym && ln -s {data_sh} data-dir"),
        tool("search_files", pattern="."),
    ),
    refused(
        "symlink-as-workspace-tmp",
        "symlink",
        "symlink_escape",
        bash("rm -rf .tmp && ln -s {rootdir} .tmp"),
        bash("true"),  # root must not chown what .tmp points at to the sandbox user
    ),
    refused(
        "graded-output-files-symlink-to-hidden",
        "symlink",
        "symlink_escape",
        tool("write_file", path="solution.py", content=SOLUTION_LINKS_OUTPUT_FILES),
        tool("evaluate"),
        check=no_score,
        bound_s=30,
    ),
    # Hard links.
    contained(
        "hardlink-to-hidden",
        "hardlink",
        bash("ln {hidden_sh} h.npz; ln {data_sh}/secret.txt s"),
        tool("read_file", path="h.npz"),
    ),
    contained(
        "hardlink-to-outside-then-write",
        "hardlink",
        bash("ln {outside}/bait.txt bait"),
        tool("write_file", path="bait", content="pwned"),
    ),
    contained(
        "hardlink-to-system-file-then-write",
        "hardlink",
        bash("ln /etc/passwd passwd; ln /usr/bin/su su"),
        tool("write_file", path="passwd", content="root::0:0::/root:/bin/sh\n"),
        check=passwd_unchanged,
    ),
    # /proc.
    contained(
        "proc-1-root",
        "proc",
        bash("ls /proc/1/root/; cat /proc/1/root{data_sh}/secret.txt; cat /proc/1/environ"),
    ),
    contained(
        "proc-pid-root-of-every-process", "proc", bash(EVERY_PROCESS_ROOT), beside_victim=True
    ),
    refused(
        "proc-self-cwd",
        "proc",
        "absolute_path",
        tool("read_file", path="/proc/self/cwd/../secret.txt"),
        bash("ls -la /proc/self/cwd/ /proc/self/cwd/.. /proc/self/root/"),
    ),
    refused(
        "symlink-to-worker-cwd",
        "proc",
        "symlink_escape",
        bash("ln -s /proc/self/cwd wd"),
        tool("read_file", path="wd/pyproject.toml"),
    ),
    contained("kill-the-worker", "proc", bash("kill -9 {worker}; kill -STOP {worker}; kill -9 1")),
    # Other runs' workspaces.
    refused(
        "dotdot-to-other-run",
        "other-runs",
        "path_traversal",
        tool("read_file", path="{victim_rel}/victim.txt"),
    ),
    refused(
        "bash-names-other-run",
        "other-runs",
        "protected_path",
        bash("cat {victim}/victim.txt; echo pwned > {victim}/victim.txt"),
    ),
    contained(
        "write-other-run-by-hidden-spelling",
        "other-runs",
        bash("echo pwned > {victim_sh}/victim.txt; ls {victim_sh}/.."),
    ),
    contained(
        "proc-other-run-cwd",
        "other-runs",
        bash("for p in /proc/[0-9]*; do cat $p/cwd/victim.txt 2>/dev/null; done; true"),
        beside_victim=True,
    ),
    contained(
        "kill-other-runs", "other-runs", bash("kill -9 -1; pkill -9 -u nobody"), beside_victim=True
    ),
    refused(
        "graded-outputs-symlink-to-other-run",
        "other-runs",
        "symlink_escape",
        tool("write_file", path="solution.py", content=SOLUTION_LINKS_OUTPUTS),
        tool("evaluate"),
        check=no_score,
        bound_s=30,
    ),
    # Environment and secrets.
    contained("environment", "secrets", bash("env; cat /proc/self/environ")),
    contained(
        "environment-from-python",
        "secrets",
        python("import os; print(dict(os.environ)); print(open('/proc/1/environ').read())"),
    ),
    contained(
        "worker-environ-via-proc",
        "secrets",
        bash("cat /proc/{worker}/environ; cat /proc/[0-9]*/environ"),
    ),
    refused(
        "symlink-to-worker-environ",
        "secrets",
        "symlink_escape",
        bash("ln -s /proc/self/environ e"),
        tool("read_file", path="e"),
    ),
    contained("hidden-data-from-git-history", "secrets", bash(GIT_HISTORY)),
    contained(
        "data-folder-database", "secrets", bash("strings {data_sh}/labrxiv.db; ls -la {data_sh}")
    ),
    # Network.
    refused(
        "network-loopback-tcp",
        "network",
        "network",
        python("import socket; socket.create_connection(('127.0.0.1', {port}), timeout=2)"),
    ),
    refused(
        "network-loopback-bash-dev-tcp",
        "network",
        "network",
        bash("echo hello > /dev/tcp/127.0.0.1/{port}"),
    ),
    refused(
        "network-outside",
        "network",
        "network",
        python("import socket; socket.create_connection(('1.1.1.1', 443), timeout=2)"),
    ),
    refused(
        "network-dns",
        "network",
        "network",
        python("import socket; print(socket.getaddrinfo('example.com', 443))"),
    ),
    contained(
        "network-host-unix-socket", "network", python(CONNECT_UNIX.format(address="'{unix}'"))
    ),
    contained(
        "network-abstract-unix-socket",
        "network",
        python(CONNECT_UNIX.format(address="b'\\0{abstract}'")),
    ),
    # Fork bombs.
    contained("fork-bomb", "fork-bomb", bash(":(){ :|:& };:", timeout_s=5), bound_s=20),
    stopped(
        "fork-bomb-that-keeps-forking",
        "fork-bomb",
        "time",
        python(FORK_FOREVER, timeout_s=3),
        bound_s=20,
        slow=True,
    ),
    contained(
        "fork-bomb-escaping-its-process-group",
        "fork-bomb",
        python(FORK_NEW_SESSIONS, timeout_s=3),
        bound_s=20,
    ),
    # Disk and memory exhaustion.
    stopped(
        "disk-fill-big-files",
        "disk",
        "disk",
        bash("for i in $(seq 100); do head -c 8M /dev/zero > fill$i || exit 1; done", 20),
        bound_s=30,
        check=within_the_disk_bound,
        slow=True,
    ),
    stopped(
        "disk-fill-many-files",
        "disk",
        "disk",
        bash("mkdir many && cd many && for i in $(seq 200000); do : > f$i; done", 20),
        bound_s=30,
        check=within_the_disk_bound,
        slow=True,
    ),
    stopped(
        "file-size", "disk", "file_size", python("open('big', 'wb').write(b'x' * 64 * 1024**2)")
    ),
    stopped("memory-hog", "memory", "memory", python("x = bytearray(8 * 1024**3)")),
    contained(
        "memory-split-over-processes",
        "memory",
        python(MEMORY_OVER_PROCESSES, timeout_s=15),
        watch_memory=True,
        bound_s=25,
        slow=True,
    ),
    contained(
        "memory-in-shared-tmpfs",
        "memory",
        bash(
            "for d in /dev/shm /tmp; do for i in 1 2 3 4 5 6; do "
            "head -c 15M /dev/zero > $d/{marker}-$i || break; done; done; df -h /dev/shm /tmp"
        ),
    ),
    # Long sleeps, and processes left behind.
    stopped("long-sleep", "long-sleep", "time", python("import time; time.sleep(600)", 2)),
    contained(
        "sleep-left-behind-in-background",
        "long-sleep",
        bash("nohup sleep 600 > /dev/null 2>&1 &"),
    ),
    contained(
        "sleep-left-behind-in-new-session",
        "long-sleep",
        bash("setsid sleep 600 < /dev/null > /dev/null 2>&1 &"),
    ),
    # setuid, and privileges by other means.
    contained(
        "setuid-programs",
        "setuid",
        bash(
            "id; su -c id root < /dev/null; sudo -n id; mount -t tmpfs x /mnt; "
            "python3 -c 'import os; os.setuid(0)'"
        ),
        check=no_root,
    ),
    contained(
        "setuid-shell-in-workspace",
        "setuid",
        bash("cp /bin/bash ./rootsh && chmod 4755 ./rootsh; ./rootsh -p -c id"),
        check=no_root,
    ),
    contained("user-namespace-uncovers-hidden", "setuid", bash(UNCOVER_IN_USER_NAMESPACE)),
    # Writing outside the workspace.
    refused(
        "absolute-write-outside",
        "write-outside",
        "absolute_path",
        tool("write_file", path="{outside}/abs.txt", content="x"),
        check=nothing_at("outside/abs.txt"),
    ),
    refused(
        "symlink-dir-to-outside-write",
        "write-outside",
        "symlink_escape",
        bash("ln -s {outside} out"),
        tool("write_file", path="out/through.txt", content="x"),
        check=nothing_at("outside/through.txt"),
    ),
    contained(
        "write-shared-folders",
        "write-outside",
        bash(
            "for d in /tmp /var/tmp /dev/shm {outside}; do echo pwned > $d/{marker}; done; "
            "echo pwned >> {repo}/README.md"
        ),
    ),
    contained(
        "plant-code-the-grader-would-run",
        "write-outside",
        bash(
            "for d in {purelib} {stdlib}; do echo 'import os' > $d/sitecustomize.py; done; "
            "echo 'import os' > {purelib}/numpy/{marker}.py"
        ),
        check=not_created(
            "{purelib}/sitecustomize.py",
            "{stdlib}/sitecustomize.py",
            "{purelib}/numpy/{marker}.py",
            planted=b"import os\n",
        ),
    ),
    contained(
        "write-grader-by-hidden-spelling",
        "write-outside",
        bash("echo 'SCORES = 1' >> {grader_sh}; rm -f {hidden_sh}"),
    ),
    # A workspace file that is not a file: the worker must not hang on it.
    contained(
        "fifo-read-by-read-file", "worker", bash("mkfifo pipe"), tool("read_file", path="pipe")
    ),
    contained(
        "fifo-written-by-write-file",
        "worker",
        bash("mkfifo pipe"),
        tool("write_file", path="pipe", content="x"),
    ),
    contained(
        "fifo-met-by-search-files", "worker", bash("mkfifo pipe"), tool("search_files", pattern=".")
    ),
]

ATTEMPT_CLASSES = {
    "dotdot",
    "absolute",
    "symlink",
    "hardlink",
    "proc",
    "other-runs",
    "secrets",
    "network",
    "fork-bomb",
    "disk",
    "memory",
    "long-sleep",
    "setuid",
    "write-outside",
    "worker",
}
"""The classes of attempt (and the worker's own: a file that hangs it)."""


def test_catalogue_covers_every_class_of_attempt() -> None:
    kinds = {attempt.kind for attempt in CATALOGUE}
    assert kinds == ATTEMPT_CLASSES
    assert len({attempt.name for attempt in CATALOGUE}) == len(CATALOGUE)


@pytest.mark.parametrize(
    "attempt",
    [pytest.param(a, id=a.id, marks=[pytest.mark.slow] if a.slow else []) for a in CATALOGUE],
)
def test_attempt_is_refused_or_contained(lab: Lab, attempt: Attempt) -> None:
    if attempt.name == "hidden-data-from-git-history" and not (
        shutil.which("git") and (REPO / ".git").exists()
    ):
        # .ci/run works on a clone: under CI=true this fails instead of skipping.
        missing("not a git checkout (or no git): there is no git history to read hidden data from")
    env = lab.new_env()
    values = lab.placeholders(env)
    victim = _Victim(lab.victim) if attempt.beside_victim else None
    memory = _MemoryWatch(lab.base) if attempt.watch_memory else None
    started = time.monotonic()
    invocations: list[Invocation] = []
    escapes: list[str] = []
    for number, (name, args) in enumerate(attempt.steps):
        filled = {key: _fill(value, values) for key, value in args.items()}
        outcome, problem = _run_step(env, name, filled, f"c{number}", attempt.bound_s)
        if problem:
            escapes.append(problem)
        if outcome is not None:
            invocations.append(outcome)
    elapsed = time.monotonic() - started
    peak = memory.stop() if memory else 0
    if victim:
        escapes += victim.join()
    escapes += _outcome_problems(attempt, invocations, elapsed)
    escapes += _leaks(lab, invocations)
    escapes += _host_harm(lab)
    if attempt.check:
        escapes += attempt.check(lab, env, invocations)
    if memory and lab.tree_memory and peak > LIMITS.memory_bytes * 1.1:
        escapes.append(f"the process tree held {peak / MiB:.0f} MiB at once")
    if memory and memory.largest > LIMITS.memory_bytes * 1.1:
        escapes.append(f"a process held {memory.largest / MiB:.0f} MiB")
    observed = _observed(invocations, elapsed, peak)
    if memory and not lab.tree_memory:
        observed += " (no cgroup here: each process bounded, not the tree)"
    if attempt.kind == "disk":
        observed += f", workspace {_disk_usage(env.sandbox.root) / MiB:.0f} MiB"
    print(f"{attempt.name}: {observed}")
    assert not escapes, f"ESCAPE {attempt.name} ({attempt.kind}): " + "; ".join(escapes)


# The harness.


def _fill(value: Any, values: dict[str, str]) -> Any:
    if not isinstance(value, str):
        return value
    for name in sorted(values, key=len, reverse=True):
        value = value.replace("{" + name + "}", values[name])
    return value


def _run_step(
    env: ToolEnv, name: str, args: dict[str, Any], call_id: str, bound: float
) -> tuple[Invocation | None, str | None]:
    """Run one tool call on a thread, so that a hung worker is a finding, not a hung suite."""
    box: dict[str, Any] = {}

    def call() -> None:
        try:
            box["outcome"] = invoke(env, name, args, call_id)
        except BaseException as exc:  # noqa: BLE001 - what escaped invoke is the finding
            box["error"] = exc

    thread = threading.Thread(target=call, daemon=True)
    thread.start()
    thread.join(bound)
    if thread.is_alive():
        _unstick(env.sandbox.root)
        thread.join(10)
        return box.get("outcome"), f"{name} hung the worker for more than {bound:.0f}s"
    if "error" in box:
        return None, f"{name} raised {box['error']!r} out of invoke (the lab's step would fail)"
    return box["outcome"], None


def _unstick(root: Path) -> None:
    """Open every FIFO of the workspace both ways, releasing a worker blocked on one."""
    for path in root.rglob("*"):
        if path.is_fifo():
            for flags in (os.O_RDONLY | os.O_NONBLOCK, os.O_WRONLY | os.O_NONBLOCK):
                try:
                    os.close(os.open(path, flags))
                except OSError:
                    pass


def _outcome_problems(attempt: Attempt, invocations: list[Invocation], elapsed: float) -> list[str]:
    problems = []
    kinds = [p.kind for o in invocations for p in o.payloads if p.type == "integrity.violation"]  # type: ignore[attr-defined]
    if attempt.violation and attempt.violation not in kinds:
        problems.append(f"no integrity.violation {attempt.violation} (got {kinds or 'none'})")
    if attempt.limit:
        returned = invocations[-1].payloads[1] if invocations else None
        got = getattr(returned, "limit", None)
        if got != attempt.limit:
            problems.append(f"not stopped by the {attempt.limit} limit (limit: {got})")
    if elapsed > attempt.bound_s:
        problems.append(f"took {elapsed:.1f}s, more than {attempt.bound_s:.0f}s")
    return problems


def _leaks(lab: Lab, invocations: list[Invocation]) -> list[str]:
    texts = [o.output for o in invocations]
    texts += [p.model_dump_json() for o in invocations for p in o.payloads]
    texts += [blob.decode("utf-8", "replace") for o in invocations for blob in o.blobs.values()]
    everything = "\n".join(texts)
    return [
        f"leaked {what}" for what, secret in lab.canaries.items() if secret.strip() in everything
    ]


def _host_harm(lab: Lab) -> list[str]:
    """What the attempt did to the host, repaired so that the next attempt starts clean."""
    harm = []
    for bundle, digests in lab.protected_before.items():
        if protected_digests(lab.gym / bundle) != digests:
            harm.append(f"the grader or hidden data of {bundle} changed")
    for folder in (*SHARED_TMP, lab.outside):
        written = sorted(folder.glob(f"{MARKER}*"))
        if written:
            harm.append(f"wrote {[p.name for p in written]} in {folder}")
        for path in written:
            path.unlink()
    bait = lab.outside / "bait.txt"
    if bait.read_text() != "bait\n":
        harm.append(f"{bait} was overwritten")
        bait.write_text("bait\n")
    for path, owner in lab.owners.items():
        if path.stat().st_uid != owner:
            harm.append(f"{path} now belongs to uid {path.stat().st_uid}")
            os.chown(path, owner, -1)
    victim = lab.victim.sandbox.root / "victim.txt"
    if victim.read_text() != lab.canaries["other run's file"]:
        harm.append("the other run's workspace was written")
        victim.write_text(lab.canaries["other run's file"])
    for name, listener in lab.listeners.items():
        while select.select([listener], [], [], 0)[0]:
            try:
                listener.accept()[0].close()
            except BlockingIOError:
                break
            harm.append(f"a sandboxed process connected to the host's {name} socket")
    if subprocess.run(["true"], check=False).returncode != 0:
        harm.append("the worker can no longer start processes")
    left = _wait_for_no_pids(lab.base)
    if left:
        harm.append(f"{len(left)} processes left behind")
    return harm


def _observed(invocations: list[Invocation], elapsed: float, peak: int) -> str:
    parts = []
    for outcome in invocations:
        returned = outcome.payloads[1]
        text = f"{returned.tool} exit {returned.exit_code}"  # type: ignore[attr-defined]
        if returned.limit:  # type: ignore[attr-defined]
            text += f" ({returned.limit} limit)"  # type: ignore[attr-defined]
        kinds = [p.kind for p in outcome.payloads if p.type == "integrity.violation"]  # type: ignore[attr-defined]
        if kinds:
            text += f" violation {','.join(kinds)}"
        parts.append(text)
    memory = f", peak {peak / MiB:.0f} MiB" if peak else ""
    return "; ".join(parts) + f" in {elapsed:.1f}s{memory}"


def _sandbox_pids(base: Path) -> set[int]:
    """Processes of the sandbox user that run in a workspace of this suite.

    Told apart by their mount table, which shows their workspace, under `base` (whose name
    is unique): other sandboxes on the machine (another test run's) are left alone. The
    sandbox user is `nobody` when the worker is root, else the worker's own user.
    """
    uid = str(pwd.getpwnam("nobody").pw_uid if os.geteuid() == 0 else os.getuid())
    pids = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text().splitlines()
            if not any(line.startswith("Uid:") and line.split()[1] == uid for line in status):
                continue
            if base.name in (entry / "mountinfo").read_text():
                pids.add(int(entry.name))
        except OSError:
            continue
    return pids


def _wait_for_no_pids(base: Path, seconds: float = 3.0) -> list[int]:
    deadline = time.monotonic() + seconds
    while True:
        left = sorted(_sandbox_pids(base))
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    for pid in left:  # started by this attempt: stop them so the next one starts clean
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return left


def _disk_usage(root: Path) -> int:
    total = 0
    for base, dirs, files in os.walk(root):
        for name in dirs + files:
            total += max(os.lstat(os.path.join(base, name)).st_blocks * 512, 4096)
    return total


class _Victim:
    """Another run's command, running from before the attempt until after it."""

    COMMAND = "until [ -e stop ]; do sleep 0.05; done; echo survived"
    """Runs until the suite says stop (after the attack), then ends normally: killed or
    stopped by anything else, it does not say it survived."""

    def __init__(self, env: ToolEnv) -> None:
        self.root = env.sandbox.root
        (self.root / "stop").unlink(missing_ok=True)  # the last attempt's
        self.box: dict[str, Invocation] = {}
        self.thread = threading.Thread(
            target=lambda: self.box.update(
                out=invoke(env, "bash", {"command": self.COMMAND, "timeout_s": 300}, "victim")
            ),
            daemon=True,
        )
        self.thread.start()
        # Its process is up before the attack looks for it (a fixed second, and a 4 s
        # limit for its end, would let the attack find nothing to attack on a busy
        # machine, and pass).
        deadline = time.monotonic() + 60
        while not _sandbox_pids(self.root):
            assert self.thread.is_alive(), f"the other run's command ended at once: {self.box}"
            assert time.monotonic() < deadline, "the other run's command never started"
            time.sleep(0.02)

    def join(self) -> list[str]:
        alive = self.thread.is_alive()
        (self.root / "stop").write_text("")
        self.thread.join(60)
        (self.root / "stop").unlink(missing_ok=True)
        if "out" not in self.box:
            return ["the other run's command never came back"]
        returned = self.box["out"].payloads[1]
        output = self.box["out"].output
        if not alive or returned.exit_code != 0 or "survived" not in output:  # type: ignore[attr-defined]
            code = returned.exit_code  # type: ignore[attr-defined]
            return [f"the other run's command was stopped during the attack (exit {code})"]
        return []


class _MemoryWatch:
    """The peak, over time, of the resident memory of this suite's sandboxed processes, and
    the largest one process held."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.peak = 0
        self.largest = 0
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._sample, daemon=True)
        self.thread.start()

    def _sample(self) -> None:
        while not self.done.is_set():
            total = 0
            for pid in _sandbox_pids(self.base):
                try:
                    status = Path(f"/proc/{pid}/status").read_text()
                except OSError:
                    continue
                for line in status.splitlines():
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1]) * 1024
                        self.largest = max(self.largest, int(line.split()[1]) * 1024)
            self.peak = max(self.peak, total)
            time.sleep(0.05)

    def stop(self) -> int:
        self.done.set()
        self.thread.join()
        return self.peak


@pytest.mark.timeout(1800)
def test_the_rootless_backend_passes_as_a_normal_user() -> None:
    """Run as root (as CI runs), this suite runs every attempt again on its rootless
    backend as a normal user, the user that backend is for: each must be refused or
    contained there too, none skipped."""
    # In cgroups of its own where they can be made, as a systemd user session has: the
    # process tree's memory is then bounded as a whole (`memory-split-over-processes`).
    rootless_pass_as_normal_user(Path(__file__), 1500, delegate=True)
