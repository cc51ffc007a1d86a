"""Claude Code, installed from the npm registry, as a lab on continual-digits: its
profile, the run's sandbox, the recording endpoint (Anthropic's Messages API, streamed),
the `lab` command and the lab's MCP server, from a shell as a person runs it. The local
model server plays the model in Messages API events, scripted: read TASK.md, ask the MCP
`budget` tool, run `lab finish`."""

import json
from pathlib import Path
from typing import Any

import pytest

from events.spend import spend_of_payload
from tests.agent.agent_support import KEY, run_campaign, store_of
from tests.agent.claude_code_env import claude_code_prefix
from tests.llm.fake_server import FakeServer, Received, Scripted

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]  # the first run installs it

MODEL = "lab-model"
STEPS = [
    ("Bash", {"command": "cat TASK.md", "description": "Read the task"}),
    ("mcp__lab__budget", {}),
    ("Bash", {"command": "lab finish 'checked the budget'", "description": "End the run"}),
]
"""The tool each answer asks for, in order."""


class Model:
    """Answers each Messages API request with the next step of STEPS, streamed, and
    keeps the usage it billed."""

    def __init__(self) -> None:
        self.billed: list[dict[str, int]] = []

    def __call__(self, received: Received) -> Scripted:
        body = received.body if isinstance(received.body, dict) else {}
        step = sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")
        usage = {
            "input_tokens": 900 + step,
            "cache_read_input_tokens": 100 * step,
            "cache_creation_input_tokens": 50,
            "output_tokens": 20 + step,
        }
        self.billed.append(usage)
        if step < len(STEPS):
            name, args = STEPS[step]
            block = {"type": "tool_use", "id": f"toolu_{step}", "name": name, "input": {}}
            deltas = [{"type": "input_json_delta", "partial_json": json.dumps(args)}]
            stop = "tool_use"
        else:
            block = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": "Done."}]
            stop = "end_turn"
        start = {
            "id": f"msg_{step}", "type": "message", "role": "assistant", "model": MODEL,
            "content": [], "stop_reason": None, "stop_sequence": None,
            "usage": usage | {"output_tokens": 1},
        }  # fmt: skip
        events: list[dict[str, Any]] = [
            {"type": "message_start", "message": start},
            {"type": "content_block_start", "index": 0, "content_block": block},
            *({"type": "content_block_delta", "index": 0, "delta": d} for d in deltas),
            {"type": "content_block_stop", "index": 0},
            {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
             "usage": {"output_tokens": usage["output_tokens"]}},
            {"type": "message_stop"},
        ]  # fmt: skip
        text = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)
        return Scripted(body=text, headers={"content-type": "text/event-stream"})


def test_claude_code_from_npm_runs_a_lab_through_the_messages_api(tmp_path: Path) -> None:
    prefix = claude_code_prefix()
    model = Model()
    with FakeServer(default=model, models=(MODEL,)) as server:
        said = run_campaign(
            tmp_path,
            server.url,
            "--labs", "1", "--papers", "1", "--mode", "isolated",
            "--agent", "claude-code", "--agent-env", str(prefix),
            "--model", MODEL, "--timeout", "400",
        )  # fmt: skip
        requests = server.messages()
        others = [r for r in server.received if r not in requests]
    assert said.returncode == 0, said.stdout[-4000:] + said.stderr[-4000:]
    store = store_of(tmp_path)
    (run,) = {r.stream for r in store.iter_records(types=["run.started"])}
    events = store.read_stream(run)
    (exited,) = [e.payload for e in events if e.type == "agent.exited"]
    stdout = (store.get_blob(exited.stdout.sha256) or b"").decode() if exited.stdout else ""
    store.engine.dispose()

    def payloads(kind: str) -> list[Any]:
        return [e.payload for e in events if e.type == kind]

    assert KEY not in json.dumps([e.payload.model_dump(mode="json") for e in events])
    assert events[-1].type == "run.finished" and events[-1].payload.reason == "done"
    # Every call went to the Messages API with the worker's key, and is in the log with
    # the server's bill (cache reads and writes counted as input).
    assert requests and not others
    assert {r.headers.get("x-api-key") for r in requests} == {KEY}
    responded = payloads("model.responded")
    assert len(payloads("model.called")) == len(responded) == len(requests) == len(model.billed)
    billed = sum(sum(u.values()) for u in model.billed)
    assert sum(spend_of_payload(r).tokens for r in responded) == billed  # type: ignore[union-attr]
    # Its tool calls are reported with the results its next requests carried; `Bash`
    # ran `lab`, and the MCP tool reached the lab.
    reported = [p for p in payloads("tool.invoked") if p.reported]
    assert [(p.tool, p.args.get("command")) for p in reported] == [
        (name, args.get("command")) for name, args in STEPS
    ]
    returned = {p.call_id: p.preview for p in payloads("tool.returned")}
    assert "## " in returned[reported[0].call_id]
    assert "attempts: used 0;" in returned[reported[1].call_id]
    lab = [p.tool for p in payloads("tool.invoked") if not p.reported]
    assert lab == ["budget", "finish"]
    # Its own files (settings, logs) stay in the jail's scratch folder, out of the log.
    assert not payloads("workspace.changed")
    assert not [p for p in payloads("tool.returned") if p.files_written or p.files_deleted]
    # `lab finish` ended the run: its next request was refused (in Anthropic's error
    # shape, which it read), and it exited saying so.
    assert exited.exit_code == 1 and exited.stopped is None
    assert "API Error: 400 labrxiv: the run has ended" in stdout, stdout
