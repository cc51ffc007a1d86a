"""What the agent-lab tests share: a campaign of agent labs run from a shell as a person
runs it, and a scripted model that acts on what the tools told it."""

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from events import EventStore
from tests.llm.fake_server import Received, Scripted, completion, usage

LABRXIV = Path(sys.executable).with_name("labrxiv")
EXAMPLES = Path(__file__).resolve().parents[2] / "workers" / "agent" / "examples"
KEY = "sk-agent-lab-test-0123456789abcdefghij"
USAGE = (200, 30)
"""Tokens each scripted answer reports (prompt, completion)."""


def agent_folder(tmp_path: Path, *scripts: str) -> Path:
    """A folder the sandbox user can read, holding the example agents named."""
    folder = tmp_path / "agent"
    folder.mkdir()
    for name in scripts:
        shutil.copyfile(EXAMPLES / name, folder / name)
        (folder / name).chmod(0o644)
    folder.chmod(0o755)
    return folder


def run_campaign(
    tmp_path: Path, base_url: str, *args: str, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """`labrxiv campaign ARGS` on the embedded defaults, the key in the environment."""
    return run_labrxiv(
        tmp_path,
        base_url,
        "campaign", "--task", "continual-digits", "--policy", "agent", *args,
        timeout=timeout,
    )  # fmt: skip


def run_labrxiv(
    tmp_path: Path, base_url: str, *args: str, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """`labrxiv ARGS` on the embedded defaults, the key in the environment."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LABRXIV_", "OPENAI_"))}
    env |= {
        "OPENAI_API_KEY": KEY,
        "OPENAI_BASE_URL": base_url,
        "LABRXIV_DATA_DIR": str(tmp_path / "data"),
        "COLUMNS": "120",
    }
    return subprocess.run(
        [str(LABRXIV), *args], env=env, capture_output=True, text=True, timeout=timeout
    )


MCP_AGENT = "openai_mcp_agent.py"


def mcp_agent_campaign(
    tmp_path: Path, base_url: str, *more: str
) -> subprocess.CompletedProcess[str]:
    """One isolated lab of the function-calling MCP example agent on gpt-4o-mini, writing
    one paper (`more`: further campaign options, which win over these)."""
    folder = agent_folder(tmp_path, MCP_AGENT)
    return run_campaign(
        tmp_path,
        base_url,
        "--labs", "1", "--papers", "1", "--mode", "isolated",
        "--agent", f"python {folder}/{MCP_AGENT}", "--agent-env", str(folder),
        "--model", "gpt-4o-mini", "--timeout", "200",
        *more,
    )  # fmt: skip


def store_of(tmp_path: Path) -> EventStore:
    return EventStore.from_url(f"sqlite:///{tmp_path / 'data' / 'labrxiv.db'}", create=False)


SCORE = re.compile(r"attempt (\d+): final_accuracy=([0-9.eE+-]+)")


def tool_results(body: Any) -> list[str]:
    """The contents of the `tool` messages of a chat request, in order."""
    return [m.get("content") or "" for m in body.get("messages", []) if m.get("role") == "tool"]


def researcher(attempts: int = 1, search: str | None = None) -> Callable[[Received], Scripted]:
    """A model that evaluates `attempts` times (searching the archive first when asked),
    submits a paper claiming the last score exactly as the grader's tool showed it, and
    finishes: each answer a function call, chosen by what the tools told it so far."""

    def answer(received: Received) -> Scripted:
        told = tool_results(received.body)
        scores = [m for text in told for m in SCORE.findall(text)]
        spent = usage(*USAGE)
        if search is not None and not told:
            query = json.dumps({"query": search})
            return completion(tool_calls=[("archive_search", query)], usage=spent)
        if len(scores) < attempts:
            return completion(tool_calls=[("evaluate", "{}")], usage=spent)
        if not any(t.startswith("submitted") for t in told):
            attempt, value = scores[-1]
            claims = [
                {
                    "subtask": "final_accuracy",
                    "metric": "accuracy",
                    "value": float(value),
                    "attempt": int(attempt),
                }
            ]
            paper = {
                "title": "Starter accuracy on continual digits",
                "abstract": "We measure the starter solution.",
                "body": f"# Results\n\nAttempt {attempt} scored {value}.",
                "claims": claims,
            }
            return completion(tool_calls=[("submit_paper", json.dumps(paper))], usage=spent)
        return completion(
            tool_calls=[("finish", json.dumps({"summary": "measured and published"}))], usage=spent
        )

    return answer


def script_folder(tmp_path: Path, name: str, text: str) -> Path:
    """A folder the sandbox user can read, holding one agent script `name` of `text`."""
    folder = tmp_path / "agent"
    folder.mkdir(exist_ok=True)
    (folder / name).write_text(text)
    (folder / name).chmod(0o644)
    folder.chmod(0o755)
    return folder


def run_events(tmp_path: Path) -> dict[str, list[Any]]:
    """Each run's events (the log as `labrxiv campaign` left it), by run stream."""
    store = store_of(tmp_path)
    try:
        runs = sorted({r.stream for r in store.iter_records(types=["run.started"])})
        return {run: store.read_stream(run) for run in runs}
    finally:
        store.engine.dispose()


def numbered(scripted: Scripted, conversation: int, step: int) -> Scripted:
    """`scripted` with its tool calls' ids naming the conversation: `c<conversation>_<step>`
    (then `_<n>` for a second call of the same answer)."""
    assert isinstance(scripted.body, dict)
    body = json.loads(json.dumps(scripted.body))
    for index, call in enumerate(body["choices"][0]["message"].get("tool_calls") or ()):
        call["id"] = f"c{conversation}_{step}" + (f"_{index + 1}" if index else "")
    return replace(scripted, body=body)


CALL_ID = re.compile(r"^c(\d+)_\d+")


def conversation_of(body: Any) -> int | None:
    """The conversation a chat request belongs to, by its tool messages' call ids (None:
    a new conversation, with no tool message yet)."""
    for message in body.get("messages", []):
        if message.get("role") == "tool":
            found = CALL_ID.match(str(message.get("tool_call_id")))
            if found:
                return int(found.group(1))
    return None
