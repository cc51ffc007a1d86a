"""An agent that speaks Anthropic's Messages API is a lab: its calls go through the
recording endpoint at `$ANTHROPIC_BASE_URL` with the worker's key as `x-api-key`, the
cache tokens of its answers count against the run's token budget, its `tool_use` blocks
and the `tool_result` blocks that answer them are its reported calls, and the call past
the budget is refused in Anthropic's error shape (400 `invalid_request_error`), as are a
request for another model (404 `not_found_error`) and a path the relay does not serve."""

from pathlib import Path

from tests.agent.agent_support import KEY, run_campaign, run_events, script_folder, store_of
from tests.llm.fake_server import FakeServer, Received, Scripted

MODEL = "claude-test-1"
AGENT = '''"""Calls the Messages API with the standard library until it is refused, answering
each tool_use block with a tool_result, and says how it was refused."""
import json
import os
import signal
import sys
import urllib.error
import urllib.request

signal.signal(signal.SIGTERM, signal.SIG_IGN)  # say what the refusal was first
url = os.environ["ANTHROPIC_BASE_URL"] + "/v1/messages"
tools = [{"name": "bash", "description": "Run a command.",
          "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}}}]



def refused(exc):
    said = json.load(exc)
    return f"{exc.code} {said['type']} {said['error']['type']}: {said['error']['message']}"


for path, model in (("/v1/messages", "claude-other"), ("/v1/messages/count_tokens", None)):
    asked = {"model": model or os.environ["OPENAI_MODEL"], "max_tokens": 8,
             "messages": [{"role": "user", "content": "hi"}]}
    request = urllib.request.Request(os.environ["ANTHROPIC_BASE_URL"] + path,
        data=json.dumps(asked).encode(), headers={"content-type": "application/json"})
    try:
        urllib.request.urlopen(request, timeout=60)
    except urllib.error.HTTPError as exc:
        print(f"{path}: {refused(exc)}", flush=True)
messages = [{"role": "user", "content": "begin"}]
for number in range(1, 50):
    asked = {"model": os.environ["OPENAI_MODEL"], "max_tokens": 256, "messages": messages,
             "tools": tools}
    request = urllib.request.Request(url, data=json.dumps(asked).encode(), headers={
        "content-type": "application/json", "anthropic-version": "2023-06-01",
        "x-api-key": os.environ["ANTHROPIC_API_KEY"]})
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            message = json.load(answer)
    except urllib.error.HTTPError as exc:
        print(f"refused: {refused(exc)}", flush=True)
        sys.exit(1)
    print(f"call {number}: answered", flush=True)
    messages.append({"role": "assistant", "content": message["content"]})
    messages.append({"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": block["id"],
         "content": "ran " + block["input"]["command"]}
        for block in message["content"] if block["type"] == "tool_use"]})
'''
USAGE = {"input_tokens": 50, "cache_read_input_tokens": 150, "output_tokens": 30}
"""230 tokens an answer as labrxiv counts them (80 without the cache read)."""


def answer(received: Received) -> Scripted:
    """A message asking for one command, numbered by the requests so far."""
    number = len(received.body["messages"]) // 2 + 1
    content = [
        {"type": "text", "text": f"step {number}"},
        {"type": "tool_use", "id": f"toolu_{number}", "name": "bash",
         "input": {"command": f"echo {number}"}},
    ]  # fmt: skip
    body = {
        "id": f"msg_{number}", "type": "message", "role": "assistant", "model": MODEL,
        "content": content, "stop_reason": "tool_use", "stop_sequence": None, "usage": USAGE,
    }  # fmt: skip
    return Scripted(body=body)


def test_a_messages_api_agent_is_recorded_and_stopped_at_its_token_budget(
    tmp_path: Path,
) -> None:
    folder = script_folder(tmp_path, "claude_like.py", AGENT)
    with FakeServer(default=answer, models=(MODEL,)) as server:
        said = run_campaign(
            tmp_path,
            server.url,
            "--labs", "1", "--papers", "1", "--mode", "isolated",
            "--agent", f"python {folder}/claude_like.py",
            "--agent-env", str(folder),
            "--model", MODEL,
            "--tokens", "500",
            "--timeout", "200",
        )  # fmt: skip
        requests = server.messages()
    assert said.returncode == 0, said.stdout[-3000:] + said.stderr[-3000:]
    # Three calls reached the provider with the worker's key, none other.
    assert len(requests) == 3 == len(server.received)
    assert {r.headers["x-api-key"] for r in requests} == {KEY}
    assert all("authorization" not in r.headers for r in requests)
    ((_, events),) = run_events(tmp_path).items()
    types = [e.type for e in events]
    assert events[-1].type == "run.finished" and events[-1].payload.reason == "budget", types
    responded = [e.payload for e in events if e.type == "model.responded"]
    assert types.count("model.called") == len(responded) == 3
    counted = {(r.usage.input_tokens, r.usage.cached_input_tokens) for r in responded}
    assert counted == {(200, 150)}
    (over,) = [e.payload for e in events if e.type == "budget.exceeded"]
    assert over.budget == "tokens" and over.used == 3 * 230
    # Each answer's tool_use is a reported call, returned by the tool_result sent back (the
    # last one's never was: the agent was stopped first).
    invoked = [e.payload for e in events if e.type == "tool.invoked"]
    returned = [e.payload for e in events if e.type == "tool.returned"]
    assert [(i.tool, i.args, i.reported) for i in invoked] == [
        ("bash", {"command": f"echo {n}"}, True) for n in (1, 2, 3)
    ]
    assert [r.call_id for r in returned] == [i.call_id for i in invoked]
    assert [r.preview for r in returned[:2]] == ["ran echo 1", "ran echo 2"]
    assert all(r.reported for r in returned) and "no result" in returned[2].preview
    # The agent was refused in Anthropic's shape and stopped.
    (exited,) = [e.payload for e in events if e.type == "agent.exited"]
    assert exited.stopped == "tokens" and exited.stdout is not None
    store = store_of(tmp_path)
    try:
        stdout = (store.get_blob(exited.stdout.sha256) or b"").decode()
    finally:
        store.engine.dispose()
    other, count, *lines = stdout.splitlines()
    # A request for another model is refused as Anthropic's API refuses an unknown model,
    # and count_tokens is no route: neither reaches the provider.
    assert other.startswith("/v1/messages: 404 error not_found_error: labrxiv: this lab's")
    assert count.startswith("/v1/messages/count_tokens: 404 error not_found_error: no route")
    assert lines[:3] == ["call 1: answered", "call 2: answered", "call 3: answered"], stdout
    assert lines[3].startswith("refused: 400 error invalid_request_error: "), stdout
    assert "tokens" in lines[3] and len(lines) == 4
