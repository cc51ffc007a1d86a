"""What a whole agent process needs of a sandbox, on every backend: a loopback of the
jail's own on request (never the machine's), variables added to one command's
environment, a further folder shown read-only. The root jail runs as root, the rootless
one as a normal user (run as root, this file runs itself again as one:
`test_the_rootless_backend_passes_as_a_normal_user`)."""

import functools
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.needs import needs_root
from tests.unprivileged import rootless_pass_as_normal_user, usable
from workers.sandbox.backends import Backend, backend_names
from workers.sandbox.backends.userns import UsernsSandbox
from workers.sandbox.base import Limits, SandboxUnavailable
from workers.sandbox.local import LocalSandbox

SMALL = Limits(wall_seconds=20, cpu_seconds=20, memory_bytes=512 * 1024**2, output_bytes=8192)

CONNECT = """
import socket, sys
try:
    socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5).close()
    print('connected')
except OSError as exc:
    print('refused', exc.errno)
"""

TO_ITSELF = """
import socket
server = socket.socket()
server.bind(('127.0.0.1', 0))
server.listen(1)
try:
    socket.create_connection(server.getsockname(), timeout=5).close()
    print('connected')
except OSError as exc:
    print('refused', exc.errno)
"""

TALK = """
import socket, subprocess, sys
server = socket.socket()
server.bind(('127.0.0.1', 0))
server.listen(1)
server.settimeout(15)
port = server.getsockname()[1]
client = (
    "import socket, sys\\n"
    "with socket.create_connection(('127.0.0.1', int(sys.argv[1])), timeout=10) as s:\\n"
    "    s.sendall(b'ping')\\n"
    "    print(s.recv(16).decode())\\n"
)
other = subprocess.Popen([sys.executable, '-c', client, str(port)])
connection, _ = server.accept()
connection.sendall(connection.recv(16).upper())
connection.close()
sys.exit(other.wait())
"""

KILLED_WORKER = """
import sys
from pathlib import Path
from workers.sandbox.backends import choose
from workers.sandbox.base import Limits
limits = Limits(wall_seconds=300, cpu_seconds=300, memory_bytes=512 * 1024**2, output_bytes=8192)
box = choose(sys.argv[1])(Path(sys.argv[2]), limits=limits)
box.prepare()
box.exec(["sh", "-c", "sleep 300; : " + sys.argv[3]])
"""
"""A worker: runs a jailed command that would outlive it by minutes (marked by argv[3])."""


@pytest.fixture(params=backend_names())
def backend(request: pytest.FixtureRequest) -> Backend:
    """Each backend in turn."""
    return usable(request.param)


@pytest.fixture
def sandbox(backend: Backend, tmp_path: Path) -> Iterator[LocalSandbox]:
    os.chmod(tmp_path, 0o755)
    box = backend(tmp_path / "ws", limits=SMALL)
    assert isinstance(box, LocalSandbox)
    box.prepare()
    yield box
    box.cleanup()


@pytest.fixture
def host_listener() -> Iterator[tuple[int, list[object]]]:
    """A TCP server on the machine's loopback: its port, and the connections it accepted."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    accepted: list[object] = []

    def serve() -> None:
        while True:
            try:
                connection, peer = server.accept()
            except OSError:
                return
            accepted.append(peer)
            connection.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1], accepted
    finally:
        server.shutdown(socket.SHUT_RDWR)
        server.close()
        thread.join(timeout=10)


@pytest.fixture
def agent(tmp_path: Path) -> Path:
    """An agent's install folder, outside the workspace, with a program in it."""
    folder = tmp_path / "agent"
    (folder / "bin").mkdir(parents=True)
    program = folder / "bin" / "agent-hello"
    program.write_text("#!/bin/sh\necho hello from the agent\n")
    program.chmod(0o755)
    for path in (tmp_path, folder, folder / "bin"):
        os.chmod(path, 0o755)
    return folder


def test_loopback_is_off_by_default(sandbox: LocalSandbox) -> None:
    assert sandbox.loopback is False
    result = sandbox.exec(["python", "-c", TO_ITSELF])
    assert result.stdout.startswith("refused"), result.stdout + result.stderr
    sandbox.loopback = True
    result = sandbox.exec(["python", "-c", TO_ITSELF])
    assert result.stdout == "connected\n", result.stdout + result.stderr


def test_with_loopback_two_processes_inside_talk_over_127_0_0_1(sandbox: LocalSandbox) -> None:
    sandbox.loopback = True
    result = sandbox.exec(["python", "-c", TALK])
    assert (result.exit_code, result.stdout) == (0, "PING\n"), result.stderr


def test_with_loopback_the_machines_loopback_and_the_outside_stay_out_of_reach(
    sandbox: LocalSandbox, host_listener: tuple[int, list[object]]
) -> None:
    port, accepted = host_listener
    with socket.create_connection(("127.0.0.1", port), timeout=5) as reached:  # from outside
        assert reached.recv(1) == b""  # closed by the server once it had accepted
    sandbox.loopback = True
    inside = sandbox.exec(["python", "-c", CONNECT, "127.0.0.1", str(port)])
    assert inside.stdout.startswith("refused"), inside.stdout + inside.stderr
    outside = sandbox.exec(["python", "-c", CONNECT, "192.0.2.1", "80"])
    assert outside.stdout.startswith("refused"), outside.stdout + outside.stderr
    assert len(accepted) == 1  # the test's own connection, none from the jail


def test_loopback_is_an_option_of_the_constructor(sandbox: LocalSandbox, tmp_path: Path) -> None:
    box = type(sandbox)(tmp_path / "on", limits=SMALL, loopback=True)
    box.prepare()
    try:
        result = box.exec(["python", "-c", TALK])
        assert (result.exit_code, result.stdout) == (0, "PING\n"), result.stderr
    finally:
        box.cleanup()


def test_env_reaches_the_command_and_the_workers_own_does_not(
    sandbox: LocalSandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LABRXIV_WORKER_ONLY", "worker-secret")
    result = sandbox.exec(["sh", "-c", "env"], env={"AGENT_MODEL_URL": "http://127.0.0.1:9"})
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "AGENT_MODEL_URL=http://127.0.0.1:9" in lines
    assert "LANG=C.UTF-8" in lines  # the fixed environment stays
    assert "worker-secret" not in result.stdout
    again = sandbox.exec(["sh", "-c", "env"])
    assert "AGENT_MODEL_URL" not in again.stdout  # for that command alone


def test_a_folder_not_shown_is_not_there(sandbox: LocalSandbox, agent: Path) -> None:
    result = sandbox.exec([str(agent / "bin" / "agent-hello")])
    assert result.exit_code != 0
    assert "hello" not in result.stdout


def test_a_shown_folder_runs_its_programs_and_cannot_be_written(
    sandbox: LocalSandbox, agent: Path
) -> None:
    sandbox.show(agent)
    ran = sandbox.exec([str(agent / "bin" / "agent-hello")])
    assert (ran.exit_code, ran.stdout) == (0, "hello from the agent\n"), ran.stderr
    wrote = sandbox.exec(
        ["sh", "-c", f"echo x > {agent}/bin/planted; echo y >> {agent}/bin/agent-hello"]
    )
    assert wrote.exit_code != 0
    assert "Read-only file system" in wrote.stderr, wrote.stderr
    assert not (agent / "bin" / "planted").exists()
    assert (agent / "bin" / "agent-hello").read_text().endswith("echo hello from the agent\n")


def test_path_in_env_replaces_the_default_one(sandbox: LocalSandbox, agent: Path) -> None:
    sandbox.show(agent)
    path = f"{agent}/bin:/usr/bin:/bin"
    result = sandbox.exec(["sh", "-c", 'agent-hello && echo "$PATH"'], env={"PATH": path})
    assert (result.exit_code, result.stdout) == (0, f"hello from the agent\n{path}\n"), (
        result.stderr
    )


def test_a_shown_link_is_shown_at_its_own_path_and_its_targets(
    sandbox: LocalSandbox, agent: Path, tmp_path: Path
) -> None:
    link = tmp_path / "current-agent"
    link.symlink_to(agent)
    sandbox.show(link)
    for program in (link / "bin" / "agent-hello", agent / "bin" / "agent-hello"):
        ran = sandbox.exec([str(program)])
        assert (ran.exit_code, ran.stdout) == (0, "hello from the agent\n"), ran.stderr


def test_show_refuses_what_is_not_a_folder_and_what_holds_the_workspace(
    sandbox: LocalSandbox, agent: Path
) -> None:
    for wrong in (agent / "bin" / "agent-hello", agent / "missing", sandbox.root.parent, Path("/")):
        with pytest.raises(ValueError):
            sandbox.show(wrong)
    assert sandbox.shown == []


def _marked(marker: str, but: int = 0) -> list[int]:
    """The processes whose command line holds `marker`, but process `but`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == but:
            continue
        try:
            if marker.encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue  # it ended meanwhile
    return found


def _until(condition: Callable[[], bool], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_a_jail_dies_with_the_worker_killed_while_it_runs(backend: Backend, tmp_path: Path) -> None:
    """A worker SIGKILLed mid-command (its whole process group) takes its jail with it:
    nothing of a killed step runs on beside the next take in the same workspace."""
    marker = f"labrxiv-orphan-{uuid.uuid4().hex}"
    worker = subprocess.Popen(
        [sys.executable, "-c", KILLED_WORKER, backend.backend, str(tmp_path / "ws"), marker],
        start_new_session=True,
    )
    try:
        jailed = functools.partial(_marked, marker, but=worker.pid)
        assert _until(lambda: bool(jailed()), 60), "the jailed command never started"
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait(timeout=10)
        assert _until(lambda: not jailed(), 10), f"left running: {jailed()}"
    finally:
        if worker.poll() is None:
            os.killpg(worker.pid, signal.SIGKILL)
            worker.wait(timeout=10)
        for pid in _marked(marker):
            os.kill(pid, signal.SIGKILL)


def test_rootless_show_refuses_a_folder_nobody_cannot_reach() -> None:
    """Started by root, the rootless jail is built by `nobody`: a folder shown must be
    open to it, as the interpreter's must."""
    needs_root("the rootless backend checks what nobody can reach when root starts it")
    # Not pytest's tmp_path: its parents are private to root.
    base = Path(tempfile.mkdtemp(prefix="labrxiv-show-", dir="/tmp"))
    try:
        os.chmod(base, 0o755)
        closed = base / "closed" / "venv"
        closed.mkdir(parents=True)
        os.chmod(base / "closed", 0o700)
        box = UsernsSandbox(base / "ws", limits=SMALL)
        with pytest.raises(SandboxUnavailable, match="cannot reach"):
            box.show(closed)
        os.chmod(base / "closed", 0o755)
        os.chmod(closed, 0o700)
        with pytest.raises(SandboxUnavailable, match="cannot reach"):
            box.show(closed)
        assert box.shown == []
        os.chmod(closed, 0o755)
        box.show(closed)
        assert box.shown == [closed]
    finally:
        shutil.rmtree(base)


@pytest.mark.timeout(600)
def test_the_rootless_backend_passes_as_a_normal_user() -> None:
    """Run as root (as CI runs), this file runs its rootless backend's tests again as a
    normal user, the user that backend is for; every one must pass, none be skipped."""
    rootless_pass_as_normal_user(Path(__file__), timeout=500)
