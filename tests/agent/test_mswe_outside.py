"""mini-swe-agent runs as its profile says, outside any sandbox, against a scripted model.

The agent process gets what a lab's sandbox gives it: the workspace as its working
directory and HOME, stdin closed, no terminal, and an environment of only PATH (a fake
`lab` that logs its arguments, and the system's tools), HOME, OPENAI_BASE_URL,
OPENAI_API_KEY and the profile's own variables.
"""

import json
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.agent.mswe_env import command_line, environment, mswe_venv, profile
from tests.agent.mswe_server import FINISH_MARKER, LAB_RUN, scripted_run
from tests.llm.fake_server import FakeServer, Received, completion, usage

MODEL = "lab-model"
API_KEY = "placeholder-key"
TASK = "# Task\n\nRaise the accuracy of the model configured in config.json.\n"
LAB_OUTPUT = "attempt 1: accuracy=0.5"
RUN_TIMEOUT_S = 240

pytestmark = pytest.mark.timeout(1200)  # the first run installs mini-swe-agent


@dataclass
class Lab:
    """A workspace, the fake `lab` beside it, and the server playing the model."""

    workspace: Path
    calls: Path
    """One line per `lab` run: its arguments."""
    bin: Path
    server: FakeServer

    def lab_calls(self) -> list[str]:
        return self.calls.read_text().splitlines() if self.calls.exists() else []


@pytest.fixture(scope="module")
def venv() -> Path:
    return mswe_venv()


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[Lab]:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "TASK.md").write_text(TASK)
    (workspace / "config.json").write_text('{"lr": "a"}\n')
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "lab-calls.txt"
    fake_lab = bin_dir / "lab"
    fake_lab.write_text(f'#!/bin/sh\necho "$*" >> "{calls}"\necho "{LAB_OUTPUT}"\n')
    fake_lab.chmod(0o755)
    with FakeServer() as server:
        yield Lab(workspace, calls, bin_dir, server)


def run_agent(lab: Lab, venv: Path, step_limit: int) -> subprocess.CompletedProcess[str]:
    """The profile's command, as a sandbox would start it, with fd 0 closed."""
    found = profile()
    argv = command_line(found, venv, MODEL, lab.workspace / "TASK.md", step_limit)
    env = environment(found, f"{lab.bin}:/usr/bin:/bin", lab.workspace, lab.server.url, API_KEY)
    return subprocess.run(
        ["/bin/sh", "-c", 'exec "$@" <&-', "sh", *argv],
        cwd=lab.workspace,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
    )


def last_message(request: Received) -> dict[str, str]:
    message = request.body["messages"][-1]
    assert isinstance(message, dict)
    return message


def test_the_lab_run_evaluates_three_times_submits_and_ends(lab: Lab, venv: Path) -> None:
    lab.server.queue(*scripted_run(LAB_RUN))

    done = run_agent(lab, venv, step_limit=20)

    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    requests = lab.server.completions()
    assert len(requests) == len(LAB_RUN)
    assert lab.server.pending == 0
    assert lab.lab_calls() == ["evaluate"] * 3 + ["submit PAPER.md --claims CLAIMS.json"]
    assert json.loads((lab.workspace / "config.json").read_text()) == {"lr": "b"}
    assert (lab.workspace / "CLAIMS.json").exists() and (lab.workspace / "PAPER.md").exists()

    first = requests[0].body
    assert first["model"] == MODEL
    assert [m["role"] for m in first["messages"]] == ["system", "user"]
    assert "TASK.md" in first["messages"][1]["content"]
    assert requests[0].headers["authorization"] == f"Bearer {API_KEY}"
    # Each later request carries the previous command's output as the last user message.
    observations = [last_message(r) for r in requests[1:]]
    assert all(m["role"] == "user" for m in observations)
    assert "Raise the accuracy" in observations[0]["content"]
    for evaluated in observations[2:6]:
        assert LAB_OUTPUT in evaluated["content"]
        assert "<returncode>0</returncode>" in evaluated["content"]
    assert len(requests[-1].body["messages"]) == 2 + 2 * (len(LAB_RUN) - 1)

    trajectory = json.loads((lab.workspace / ".mini-swe-agent" / "trajectory.json").read_text())
    assert trajectory["info"]["exit_status"] == "Submitted"
    assert trajectory["info"]["mini_version"] == profile()["version"]
    written = {p.name for p in lab.workspace.iterdir()}
    assert written == {"TASK.md", "config.json", "PAPER.md", "CLAIMS.json", ".mini-swe-agent"}


def test_the_step_limit_ends_the_run_without_the_finish_marker(lab: Lab, venv: Path) -> None:
    lab.server.queue(*scripted_run(["lab evaluate"] * 5 + [f"echo {FINISH_MARKER}"]))

    done = run_agent(lab, venv, step_limit=2)

    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert len(lab.server.completions()) == 2
    assert lab.lab_calls() == ["evaluate"] * 2
    trajectory = json.loads((lab.workspace / ".mini-swe-agent" / "trajectory.json").read_text())
    assert trajectory["info"]["exit_status"] == "LimitsExceeded"


def test_answers_without_one_bash_block_end_the_run_after_three(lab: Lab, venv: Path) -> None:
    no_block = completion(text="THOUGHT: I am not sure what to do.", usage=usage(900, 10))
    lab.server.queue(no_block, no_block, no_block, *scripted_run(["lab evaluate"]))

    done = run_agent(lab, venv, step_limit=20)

    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    requests = lab.server.completions()
    assert len(requests) == 3
    assert lab.lab_calls() == []
    told = last_message(requests[1])
    assert told["role"] == "user" and "Format error" in told["content"]
    trajectory = json.loads((lab.workspace / ".mini-swe-agent" / "trajectory.json").read_text())
    assert trajectory["info"]["exit_status"] == "RepeatedFormatError"
