"""Codex CLI runs as its profile says, outside any sandbox, against a scripted model that
speaks the Responses API as OpenAI streams it (tests/agent/codex_server.py).

The agent process gets what a lab's sandbox gives it: the workspace as its working
directory and HOME (its `.tmp` as TMPDIR), stdin closed, no terminal, and an environment
of only PATH (a fake `lab` that logs its arguments, `lab-mcp` the lab's real MCP server
with no lab behind it, and the system's tools), HOME, TMPDIR, OPENAI_BASE_URL,
OPENAI_API_KEY and the profile's own variables.
"""

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.agent.codex_env import codex_prefix, command_line, environment, profile
from tests.agent.codex_server import FINAL, MCP_BUDGET, CodexResearcher
from tests.llm.fake_server import FakeServer, Scripted

MODEL = "lab-model"
API_KEY = "placeholder-key"
TASK = "# Task\n\nMeasure the starter solution and publish the result.\n"
LAB_SCORE = "attempt 1: final_accuracy=0.8125"
LAB_MCP = Path(__file__).resolve().parents[2] / "workers" / "agent" / "inside" / "lab_mcp.py"

pytestmark = pytest.mark.timeout(1200)  # the first run installs Codex CLI


def fake_lab(folder: Path, calls: Path, mcp: bool) -> None:
    """A `lab` on PATH that logs its arguments and answers as the real one does, and
    (`mcp`) `lab-mcp` starting the lab's MCP server (its tools say no lab is reachable)."""
    folder.mkdir()
    if mcp:
        server = folder / "lab-mcp"
        server.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{LAB_MCP}" "$@"\n')
        server.chmod(0o755)
    script = folder / "lab"
    script.write_text(
        "#!/bin/sh\n"
        f'echo "$*" >> "{calls}"\n'
        'case "$1" in\n'
        f'  evaluate) echo "{LAB_SCORE}" ;;\n'
        '  submit) echo "submitted paper pap_1 (1 claim)" ;;\n'
        '  finish) echo "finished" ;;\n'
        "esac\n"
    )
    script.chmod(0o755)


def run_codex(
    tmp_path: Path, server: FakeServer, mcp: bool = True
) -> subprocess.CompletedProcess[str]:
    """The profile's command, as a lab's sandbox would run it, in `tmp_path/workspace`
    with the fake `lab` of `tmp_path/bin` (logging to `tmp_path/lab-calls.txt`)."""
    prefix = codex_prefix()
    found = profile()
    workspace = tmp_path / "workspace"
    (workspace / ".tmp").mkdir(parents=True)
    (workspace / "TASK.md").write_text(TASK)
    fake_lab(tmp_path / "bin", tmp_path / "lab-calls.txt", mcp)
    path = f"{tmp_path / 'bin'}:/usr/bin:/bin"
    return subprocess.run(
        command_line(found, prefix, MODEL, workspace / "TASK.md"),
        cwd=workspace,
        env=environment(found, path, workspace, server.url, API_KEY),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_codex_runs_its_profile_against_a_responses_api_model(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    calls = tmp_path / "lab-calls.txt"
    model = CodexResearcher()
    with FakeServer(default=model) as server:
        ran = run_codex(tmp_path, server)
        requests = server.responses()
        other = [r.path for r in server.received if r not in requests]
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    assert FINAL in ran.stdout
    # The settings it was given, as the wrapper wrote them from the environment.
    config = tomllib.loads((workspace / ".tmp" / "codex-home" / "config.toml").read_text())
    assert config["model"] == MODEL
    assert config["model_providers"]["labrxiv"]["base_url"] == server.url
    # Only the Responses API, streamed, for the run's model, with the placeholder key.
    assert other == []
    assert [r.path for r in requests] == ["/v1/responses"] * len(model.billed)
    for request in requests:
        assert request.body["model"] == MODEL and request.body["stream"] is True
        assert request.headers["authorization"] == f"Bearer {API_KEY}"
    tools = {t.get("name"): t for t in requests[0].body["tools"]}
    assert "exec_command" in tools and "web_search" not in {t["type"] for t in tools.values()}
    # The lab's MCP server was started before the first request (`required`): its tools
    # are listed as the namespace `mcp__lab`, and a call of one reached it.
    lab_tools = {t["name"] for t in tools["mcp__lab"]["tools"]}
    assert {"evaluate", "archive_search", "submit_paper", "budget", "finish"} <= lab_tools
    assert MCP_BUDGET in model.tools
    # Its commands ran in the workspace, `lab` found on PATH (no login shell).
    assert calls.read_text().splitlines() == [
        "evaluate",
        "submit PAPER.md --claims claims.json",
        "finish measured and published",
    ]
    claims = json.loads((workspace / "claims.json").read_text())
    assert claims == [
        {"subtask": "final_accuracy", "metric": "accuracy", "value": 0.8125, "attempt": 1}
    ]
    # Each call's output came back in the next request, by its call id.
    last = requests[-1].body["input"]
    asked = [i["call_id"] for i in last if i.get("type") == "function_call"]
    answered = [i for i in last if i.get("type") == "function_call_output"]
    numbered = [f"call_{n}" for n in range(1, len(model.tools) + 1)]
    assert asked == [i["call_id"] for i in answered] == numbered
    said = dict(zip(model.tools, (json.dumps(i["output"]) for i in answered), strict=True))
    assert "LABRXIV_LAB_SOCKET is not set" in said[MCP_BUDGET]


def test_codex_stops_at_a_spent_budget_without_retrying(tmp_path: Path) -> None:
    # A spent budget is answered as labrxiv's endpoint answers it: 429 insufficient_quota,
    # `x-should-retry: false`. Codex asks once and exits 1 saying so.
    refused = {
        "message": "labrxiv: the run's tokens budget is spent",
        "type": "insufficient_quota",
        "param": None,
        "code": "insufficient_quota",
    }
    quota = Scripted(status=429, body={"error": refused}, headers={"x-should-retry": "false"})
    with FakeServer(default=quota) as server:
        ran = run_codex(tmp_path, server)
        requests = server.responses()
    assert ran.returncode == 1, ran.stdout[-3000:] + ran.stderr[-3000:]
    assert "Quota exceeded" in ran.stderr
    assert len(requests) == 1


def test_codex_stops_before_its_first_request_without_the_lab_mcp_server(
    tmp_path: Path,
) -> None:
    # The profile's MCP server is `required`: one that cannot start ends Codex at once.
    with FakeServer(default=CodexResearcher()) as server:
        ran = run_codex(tmp_path, server, mcp=False)
        requests = server.responses()
    assert ran.returncode == 1, ran.stdout[-3000:] + ran.stderr[-3000:]
    assert "required MCP servers failed to initialize: lab" in ran.stderr
    assert requests == []
