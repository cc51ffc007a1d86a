"""Anthropic's Messages API through the recording endpoint, driven by Anthropic's own
Python client (in a virtualenv of its own, tests/agent/anthropic_env.py) through the
launcher's loopback relay and the lab socket, against a scripted provider: the key goes
as `x-api-key`, the ledger is the provider's bill (cache reads and writes counted as
input), the answer's `tool_use` blocks and the next request's `tool_result` blocks are
the agent's reported calls, and errors reach the client in Anthropic's shape."""

import json
import socket
import subprocess
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from events.payloads import ModelCalled, ModelResponded
from tests.agent.anthropic_env import anthropic_python
from tests.agent.upstream import Canned, Upstream
from workers.agent import reported
from workers.agent.answers import Answer
from workers.agent.inside import launcher
from workers.agent.relay import ModelRelay, Relayed
from workers.agent.server import LabSocket, Replier
from workers.agent.session import AgentSession
from workers.llm.prices import PriceTable

pytestmark = pytest.mark.timeout(900)  # the first run installs Anthropic's client

KEY = "sk-ant-test-relay-0123456789abcdefghijklmnop"
MODEL = "claude-test-1"
PRICES = """
[models."claude-test-1"]
input = 3.0
cached_input = 0.3
output = 15.0
"""
CLIENT = """
import json, sys
import anthropic

client = anthropic.Anthropic(base_url=sys.argv[1], api_key="labrxiv", max_retries=0)
said = []
for call in json.loads(sys.argv[2]):
    try:
        if call.pop("stream", False):
            with client.messages.stream(**call) as stream:
                for _ in stream:
                    pass
                message = stream.get_final_message()
        else:
            message = client.messages.create(**call)
        said.append(message.model_dump(mode="json"))
    except anthropic.APIStatusError as exc:
        said.append({"status": exc.status_code, "error": exc.body})
print(json.dumps(said))
"""


class Lab:
    """The relay behind a lab socket and the launcher's loopback port, its events kept."""

    def __init__(self, relay: ModelRelay, refuse: str | None = None) -> None:
        self.relay = relay
        self.refuse = refuse
        self.payloads: list[Any] = []
        self.blobs: dict[str, bytes] = {}
        self.relayed: list[Relayed] = []
        self.asked: list[Mapping[str, str]] = []

    def emit(self, payloads: list[Any], blobs: dict[str, bytes]) -> None:
        self.payloads += payloads
        self.blobs |= blobs

    def model_call(
        self, api: str, body: bytes, reply: Replier, asked: Mapping[str, str] | None = None
    ) -> None:
        if self.refuse is not None:  # as the session refuses a call over budget
            AgentSession._refuse(api, self.refuse, reply)
            return
        self.asked.append(asked or {})
        number = len(self.relayed) + 1
        self.relayed.append(
            self.relay.relay(api, body, f"run-t:agent:{number}", MODEL, reply, asked)
        )

    def lab_call(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        return {"error": "no lab here"}

    def models(self) -> list[str]:
        return [MODEL]

    def wait_stop(self) -> None:
        return


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[tuple[Upstream, Lab, str]]:
    python = anthropic_python()
    prices = tmp_path / "prices.toml"
    prices.write_text(PRICES)
    with Upstream() as upstream:
        lab = Lab(ModelRelay(upstream.url, KEY, PriceTable.load(prices), lambda p, b: None))
        lab.relay._emit = lab.emit
        served = LabSocket(tmp_path / "lab.sock", lab)
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        threading.Thread(
            target=launcher._relay, args=(listener, str(served.path)), daemon=True
        ).start()
        try:
            yield upstream, lab, f"{python} http://127.0.0.1:{listener.getsockname()[1]}"
        finally:
            listener.close()
            served.close()
            lab.relay.close()


def ask(client: str, *calls: dict[str, Any]) -> list[dict[str, Any]]:
    """What Anthropic's client made of `calls` (each `messages.create`'s arguments, with
    `stream` for `messages.stream`): its messages, or its errors' status and body."""
    python, base = client.split(" ")
    done = subprocess.run(
        [python, "-c", CLIENT, base, json.dumps(list(calls))],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def bill(usage: Mapping[str, int]) -> float:
    """What the scripted provider charges at PRICES: reads of the cache at the cached
    price, writes to it and the rest of the input at the input price."""
    return (
        usage["input_tokens"] * 3.0
        + usage.get("cache_creation_input_tokens", 0) * 3.0
        + usage.get("cache_read_input_tokens", 0) * 0.3
        + usage["output_tokens"] * 15.0
    ) / 1e6


def message(content: list[dict[str, Any]], usage: dict[str, int], stop: str) -> dict[str, Any]:
    return {
        "id": "msg_1", "type": "message", "role": "assistant", "model": MODEL,
        "content": content, "stop_reason": stop, "stop_sequence": None, "usage": usage,
    }  # fmt: skip


def event_stream(*events: dict[str, Any]) -> Canned:
    """A Messages API stream: each event's `event:` line and `data:` line."""
    text = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)
    return Canned(body=text.encode(), headers={"content-type": "text/event-stream"})


def no_key(lab: Lab, said: object) -> None:
    assert KEY not in "".join(p.model_dump_json() for p in lab.payloads)
    assert not any(KEY.encode() in blob for blob in lab.blobs.values())
    assert KEY not in json.dumps(said)


HI = {"model": MODEL, "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]}
TOOLS = [
    {
        "name": "bash",
        "description": "Run a shell command.",
        "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}},
    }
]


def test_a_message_is_relayed_with_the_key_and_recorded_at_the_providers_bill(lab) -> None:
    upstream, recorded, client = lab
    usage = {
        "input_tokens": 12,
        "output_tokens": 40,
        "cache_read_input_tokens": 3000,
        "cache_creation_input_tokens": 500,
    }
    text = [{"type": "text", "text": "hello from claude"}]
    upstream.answers.append(Canned(body=json.dumps(message(text, usage, "end_turn")).encode()))
    (said,) = ask(client, HI)
    assert said["content"][0]["text"] == "hello from claude"
    (seen,) = upstream.seen
    assert seen.path == "/v1/messages"
    assert seen.headers["x-api-key"] == KEY and "authorization" not in seen.headers
    (asked,) = recorded.asked  # the client's placeholder key replaced, its version passed on
    assert "labrxiv" in asked.get("x-api-key", "") + asked.get("authorization", "")
    assert seen.headers["anthropic-version"] == asked["anthropic-version"]
    called, responded = recorded.payloads
    assert isinstance(called, ModelCalled) and isinstance(responded, ModelResponded)
    assert called.request is not None and json.loads(recorded.blobs[called.request.sha256]) == (
        seen.body
    )
    assert responded.usage is not None
    assert responded.usage.input_tokens == 12 + 3000 + 500
    assert responded.usage.cached_input_tokens == 3000
    assert responded.usage.output_tokens == 40
    assert responded.cost_known and responded.cost_usd == pytest.approx(bill(usage))
    assert responded.finish_reason == "end_turn" and responded.preview == "hello from claude"
    no_key(recorded, said)


def test_a_streamed_message_passes_and_its_cumulative_usage_and_tool_use_are_recorded(
    lab,
) -> None:
    upstream, recorded, client = lab
    start = {"input_tokens": 25, "output_tokens": 1, "cache_read_input_tokens": 100}
    opened = message([], start, None)  # type: ignore[arg-type]
    upstream.answers.append(
        event_stream(
            {"type": "message_start", "message": opened},
            {"type": "content_block_start", "index": 0,
             "content_block": {"type": "text", "text": ""}},
            {"type": "ping"},
            {"type": "content_block_delta", "index": 0,
             "delta": {"type": "text_delta", "text": "Let me "}},
            {"type": "content_block_delta", "index": 0,
             "delta": {"type": "text_delta", "text": "look."}},
            {"type": "content_block_stop", "index": 0},
            {"type": "content_block_start", "index": 1,
             "content_block": {"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {}}},
            {"type": "content_block_delta", "index": 1,
             "delta": {"type": "input_json_delta", "partial_json": '{"command": '}},
            {"type": "content_block_delta", "index": 1,
             "delta": {"type": "input_json_delta", "partial_json": '"ls -la"}'}},
            {"type": "content_block_stop", "index": 1},
            {"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": None},
             "usage": {"output_tokens": 42}},
            {"type": "message_stop"},
        )
    )  # fmt: skip
    (said,) = ask(client, HI | {"stream": True, "tools": TOOLS})
    assert said["content"][0]["text"] == "Let me look."
    assert said["content"][1]["input"] == {"command": "ls -la"}
    responded = recorded.payloads[-1]
    assert isinstance(responded, ModelResponded) and responded.usage is not None
    assert (responded.usage.input_tokens, responded.usage.cached_input_tokens) == (125, 100)
    assert responded.usage.output_tokens == 42  # message_delta's count, not message_start's
    assert responded.cost_usd == pytest.approx(bill(start | {"output_tokens": 42}))
    assert responded.finish_reason == "tool_use" and responded.tool_calls == 1
    # The answer's tool_use is the agent's reported call; the next request's tool_result
    # block is its result.
    (relayed,) = recorded.relayed
    assert isinstance(relayed.answer, Answer)
    invoked, pending = reported.invoked("functions", relayed.answer, "run-t:agent:1")
    ((call, args),) = [(e.tool, e.args) for e in invoked]
    assert (call, args) == ("bash", {"command": "ls -la"}) and invoked[0].reported
    following = HI | {
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": said["content"]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1",
                 "content": [{"type": "text", "text": "total 0"}]},
                {"type": "text", "text": "go on"},
            ]},
        ]
    }  # fmt: skip
    (result,) = reported.results("messages", json.dumps(following).encode(), pending)
    assert result.pending == pending[0] and result.output == "total 0"
    no_key(recorded, said)


def test_a_provider_error_reaches_the_client_as_sent_and_is_recorded(lab) -> None:
    upstream, recorded, client = lab
    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    upstream.answers.append(Canned(529, json.dumps(overloaded).encode()))
    (said,) = ask(client, HI)
    assert said == {"status": 529, "error": overloaded}
    failed = recorded.payloads[-1]
    assert failed.type == "model.failed" and failed.status_code == 529


def test_a_refusal_and_a_malformed_request_are_errors_in_anthropics_shape(
    tmp_path: Path, lab
) -> None:
    upstream, recorded, client = lab
    recorded.refuse = "labrxiv: the run's tokens budget is spent"
    (said,) = ask(client, HI)
    assert said == {
        "status": 400,
        "error": {
            "type": "error",
            "error": {"type": "invalid_request_error", "message": recorded.refuse},
        },
    }
    assert upstream.seen == [] and recorded.payloads == []
    recorded.refuse = None
    (said,) = ask(client, HI | {"model": 7})
    assert said["status"] == 400 and said["error"]["type"] == "error"
    assert said["error"]["error"]["type"] == "invalid_request_error"
    assert "model is not a string" in said["error"]["error"]["message"]
    assert upstream.seen == []
