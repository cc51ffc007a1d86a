"""The sandbox conformance suite: every Sandbox implementation passes these."""

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from workers.sandbox.base import Limits, SandboxViolation
from workers.sandbox.local import LocalSandbox

SMALL = Limits(
    wall_seconds=5,
    cpu_seconds=5,
    memory_bytes=512 * 1024**2,
    file_bytes=1024 * 1024,
    output_bytes=4096,
)


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    """A bundle-like folder with hidden labels, outside the workspace."""
    hidden = tmp_path / "bundle" / "hidden"
    hidden.mkdir(parents=True)
    (hidden / "labels.txt").write_text("the answers")
    os.chmod(tmp_path, 0o755)
    return tmp_path / "bundle"


@pytest.fixture(params=["local"])
def sandbox(request: pytest.FixtureRequest, tmp_path: Path, secret: Path) -> Iterator[LocalSandbox]:
    box = LocalSandbox(tmp_path / "ws", hidden=[secret], limits=SMALL)
    (box.root / "train.py").write_text("print('trained')\n")
    box.prepare()
    yield box
    box.cleanup()


def test_runs_a_command_in_the_workspace(sandbox: LocalSandbox) -> None:
    result = sandbox.exec(["python", "train.py"])
    assert (result.exit_code, result.stdout, result.limit) == (0, "trained\n", None)


def test_write_then_read_round_trips(sandbox: LocalSandbox) -> None:
    sandbox.write("notes/plan.md", b"# plan")
    assert sandbox.read("notes/plan.md") == b"# plan"
    result = sandbox.exec(["python", "-c", "open('notes/plan.md','a').write('!')"])
    assert result.exit_code == 0, result.stderr
    assert sandbox.read("notes/plan.md") == b"# plan!"


@pytest.mark.parametrize("path", ["../outside.txt", "a/../../outside.txt"])
def test_path_traversal_is_refused(sandbox: LocalSandbox, path: str) -> None:
    with pytest.raises(SandboxViolation) as info:
        sandbox.write(path, b"x")
    assert info.value.kind == "path_traversal"
    assert not (sandbox.root.parent / "outside.txt").exists()


def test_absolute_path_is_refused(sandbox: LocalSandbox) -> None:
    with pytest.raises(SandboxViolation) as info:
        sandbox.read("/etc/passwd")
    assert info.value.kind == "absolute_path"


def test_symlink_escape_is_refused(sandbox: LocalSandbox, tmp_path: Path) -> None:
    (tmp_path / "elsewhere.txt").write_text("not yours")
    result = sandbox.exec(["sh", "-c", f"ln -s {tmp_path} escape"])
    assert result.exit_code == 0, result.stderr
    with pytest.raises(SandboxViolation) as info:
        sandbox.read("escape/elsewhere.txt")
    assert info.value.kind == "symlink_escape"


def test_symlink_to_hidden_data_is_refused_as_protected(
    sandbox: LocalSandbox, secret: Path
) -> None:
    os.symlink(secret / "hidden" / "labels.txt", sandbox.root / "labels.txt")
    with pytest.raises(SandboxViolation) as info:
        sandbox.read("labels.txt")
    assert info.value.kind == "protected_path"


def test_processes_cannot_read_hidden_data(sandbox: LocalSandbox, secret: Path) -> None:
    result = sandbox.exec(["python", "-c", f"print(open('{secret}/hidden/labels.txt').read())"])
    assert result.exit_code != 0
    assert "the answers" not in result.stdout
    assert (secret / "hidden" / "labels.txt").read_text() == "the answers"


def test_processes_cannot_write_to_the_grader(sandbox: LocalSandbox, secret: Path) -> None:
    result = sandbox.exec(["sh", "-c", f"echo hacked > {secret}/grade.py"])
    assert result.exit_code != 0
    assert not (secret / "grade.py").exists()


def test_processes_run_unprivileged(sandbox: LocalSandbox) -> None:
    result = sandbox.exec(["id", "-u"])
    assert result.stdout.strip() not in ("", "0")


def test_time_limit_kills_the_process_group(sandbox: LocalSandbox) -> None:
    limits = Limits(wall_seconds=1, output_bytes=4096)
    result = sandbox.exec(["sh", "-c", "sleep 30 & sleep 30"], limits=limits)
    assert result.limit == "time"
    assert result.duration_s < 10


def test_memory_limit_stops_the_process(sandbox: LocalSandbox) -> None:
    result = sandbox.exec(["python", "-c", "x = bytearray(2 * 1024**3)"])
    assert result.exit_code != 0
    assert result.limit == "memory"


def test_file_size_limit(sandbox: LocalSandbox) -> None:
    result = sandbox.exec(["python", "-c", "open('big','wb').write(b'x' * 4 * 1024**2)"])
    assert result.exit_code != 0
    assert result.limit == "file_size"
    assert (sandbox.root / "big").stat().st_size <= SMALL.file_bytes


def test_huge_output_is_cut_and_the_process_stopped(sandbox: LocalSandbox) -> None:
    result = sandbox.exec(["python", "-c", "while True: print('y' * 100)"])
    assert result.limit == "output"
    assert result.truncated
    assert len(result.stdout) <= SMALL.output_bytes
    assert result.duration_s < 5


def test_no_network_not_even_loopback(sandbox: LocalSandbox) -> None:
    code = (
        "import socket\n"
        "try:\n"
        "    socket.create_connection(('127.0.0.1', 6379), timeout=2)\n"
        "    print('connected')\n"
        "except OSError as exc:\n"
        "    print('refused', exc.errno)\n"
    )
    result = sandbox.exec(["python", "-c", code])
    assert result.stdout.startswith("refused"), result.stdout + result.stderr


def test_environment_carries_no_secrets(
    sandbox: LocalSandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-should-never-leak")
    result = sandbox.exec(["sh", "-c", "env"])
    assert "sk-should-never-leak" not in result.stdout


def test_python_in_a_shell_is_the_projects_interpreter(sandbox: LocalSandbox) -> None:
    """`bash -c "python …"` runs the interpreter the python tool runs, with numpy: labs
    run their solution from a shell (it found no python before)."""
    result = sandbox.exec(["bash", "-c", "python -c 'import numpy, sys; print(sys.executable)'"])
    assert result.exit_code == 0, result.stderr
    assert Path(result.stdout.strip()).parent == Path(sandbox.python).parent
