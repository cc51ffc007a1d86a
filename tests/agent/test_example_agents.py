"""The example agents against a scripted OpenAI-compatible server and a fake worker end
of the lab socket, each run as a lab would run it: a process in the task's folder."""

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.agent.fake_lab import FakeLab, reply
from tests.llm.fake_server import FakeServer, completion
from workers.agent.inside import FOLDER

EXAMPLES = Path(__file__).resolve().parents[2] / "workers" / "agent" / "examples"
TASK = "Classify the digits; beat the baseline."
CLAIMS = [{"subtask": "split-1", "metric": "accuracy", "value": 0.91, "attempt": 1}]
PAPER = {"title": "Herding", "abstract": "It helps.", "body": "# Herding\n", "claims": CLAIMS}


def run_agent(
    tmp_path: Path, server: FakeServer, lab: FakeLab, *args: str
) -> subprocess.CompletedProcess[str]:
    """An example agent run in `tmp_path` (its TASK.md there), on `server` and `lab`."""
    (tmp_path / "TASK.md").write_text(TASK)
    env = {
        "PATH": f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}",
        "OPENAI_BASE_URL": server.url,
        "OPENAI_API_KEY": "sk-test",
        "OPENAI_MODEL": "fake-model",
        "LABRXIV_LAB_SOCKET": str(lab.path),
    }
    return subprocess.run(
        [sys.executable, *args], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120
    )


def test_the_mcp_agent_runs_every_tool_call_and_answers_each_by_its_id(tmp_path: Path) -> None:
    answers = {
        "archive_search": reply("p-1 [lab-a] Herding for continual digits"),
        "evaluate": reply("attempt 1: accuracy 0.91"),
        "submit": reply("submitted p-2"),
    }
    with FakeServer() as server, FakeLab(tmp_path / "lab.sock", answers) as lab:
        server.queue(
            completion(tool_calls=[("archive_search", '{"query": "herding"}'), ("evaluate", "{}")]),
            completion(tool_calls=[("submit_paper", json.dumps(PAPER))]),
            completion(text="Submitted p-2."),
        )
        agent = str(EXAMPLES / "openai_mcp_agent.py")
        done = run_agent(tmp_path, server, lab, agent, str(FOLDER / "lab_mcp.py"))
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Submitted p-2.\n"
    assert lab.received == [
        ("archive_search", {"query": "herding", "k": 5}),
        ("evaluate", {}),
        ("submit", PAPER),
    ]
    first, second, third = [r.body for r in server.completions()]
    assert first["model"] == "fake-model"
    assert first["messages"] == [{"role": "user", "content": TASK}]
    assert [t["function"]["name"] for t in first["tools"]] == [
        "evaluate",
        "archive_search",
        "archive_read",
        "submit_paper",
        "budget",
        "finish",
    ]
    asked = second["messages"][1]
    assert [c["id"] for c in asked["tool_calls"]] == ["call_1", "call_2"]
    assert second["messages"][2:] == [
        {
            "role": "tool",
            "tool_call_id": "call_1",
            "content": "p-1 [lab-a] Herding for continual digits",
        },
        {"role": "tool", "tool_call_id": "call_2", "content": "attempt 1: accuracy 0.91"},
    ]
    assert third["messages"][:4] == second["messages"]
    assert [c["function"]["name"] for c in third["messages"][4]["tool_calls"]] == ["submit_paper"]
    assert third["messages"][5:] == [
        {"role": "tool", "tool_call_id": "call_1", "content": "submitted p-2"}
    ]


def test_the_mcp_agent_stops_after_finish_and_shows_refusals_as_errors(tmp_path: Path) -> None:
    answers = {"budget": reply("no attempts left", exit_code=1)}
    with FakeServer() as server, FakeLab(tmp_path / "lab.sock", answers) as lab:
        server.queue(
            completion(tool_calls=[("budget", "{}"), ("finish", '{"summary": "out of budget"}')])
        )
        agent = str(EXAMPLES / "openai_mcp_agent.py")
        done = run_agent(tmp_path, server, lab, agent, str(FOLDER / "lab_mcp.py"))
    assert done.returncode == 0, done.stderr
    assert lab.names() == ["budget", "finish"]
    assert len(server.completions()) == 1  # finish ended the run: no further request


def test_the_script_agent_runs_the_lab_command_the_model_answers(tmp_path: Path) -> None:
    bin = tmp_path / "bin"
    bin.mkdir()
    (bin / "lab").write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FOLDER / "lab.py"}" "$@"\n')
    (bin / "lab").chmod(0o755)
    answers = {"evaluate": reply("attempt 1: accuracy 0.91")}
    with FakeServer() as server, FakeLab(tmp_path / "lab.sock", answers) as lab:
        server.queue(
            completion(text="First a score.\n```bash\nlab evaluate\n```"),
            completion(text="```bash\nlab finish scored 0.91\n```"),
        )
        done = run_agent(tmp_path, server, lab, str(EXAMPLES / "script_agent.py"))
    assert done.returncode == 0, done.stderr
    assert lab.received == [("evaluate", {}), ("finish", {"summary": "scored 0.91"})]
    first, second = [r.body for r in server.completions()]
    assert first["messages"][1] == {"role": "user", "content": TASK}
    assert second["messages"][-1] == {
        "role": "user",
        "content": "exit code 0\nattempt 1: accuracy 0.91\n",
    }
