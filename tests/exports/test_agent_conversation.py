"""An agent run's conversation, from calls recorded by the real agent relay
(`workers.agent.relay.ModelRelay`) against a scripted provider: a streamed chat
completion, a whole Responses API answer and a streamed one (the server-sent events of
Codex CLI's scripted model, tests/agent/codex_server.py) are the last request and its
answer in chat form; Responses items, tools and `namespace` tools become chat messages
and functions; a tool name that is no OpenAI function name (`mcp__lab.budget`,
`lab.evaluate`) is renamed alike in calls and declarations; each line is OpenAI's
fine-tuning format (checked with the `openai` package's types); Inspect's model events
carry each call's input and output."""

import json
from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from events import Event
from events.ids import new_id, utcnow
from events.payloads import Payload, RunStarted
from projections.exports.function_names import function_name
from projections.exports.inspect_messages import inspect_messages
from tests.agent.codex_server import call_item, message_item, responses_usage, stream
from tests.agent.upstream import Canned, Upstream, sse
from tests.exports.agent_export import exported, model_events
from workers.agent.relay import ModelRelay
from workers.llm.prices import PriceTable

MODEL = "gpt-4o-mini"


class Recorded:
    """What the relay sent to the log: payloads and blobs."""

    def __init__(self) -> None:
        self.payloads: list[Payload] = []
        self.blobs: dict[str, bytes] = {}

    def __call__(self, payloads: list[Payload], blobs: dict[str, bytes]) -> None:
        self.payloads += payloads
        self.blobs |= blobs

    def events(self) -> list[Event]:
        """The run's log: its start, then what the relay recorded."""
        payloads = [RunStarted(task="t", lab="lab-0", policy="agent"), *self.payloads]
        return [
            Event(id=new_id(), stream="run-a9e47-0", version=n, occurred_at=utcnow(), payload=p)
            for n, p in enumerate(payloads)
        ]


class Agent:
    """The agent's side of a relayed call: what reached it."""

    def __init__(self) -> None:
        self.status = 0
        self.chunks: list[bytes] = []

    def start(self, status: int, headers: dict[str, str]) -> None:
        self.status = status

    def write(self, chunk: bytes) -> None:
        self.chunks.append(chunk)


@pytest.fixture
def relay() -> Iterator[tuple[Upstream, Recorded, ModelRelay]]:
    with Upstream() as upstream:
        recorded = Recorded()
        relay = ModelRelay(upstream.url, "sk-agent-export-test", PriceTable.load(), recorded)
        try:
            yield upstream, recorded, relay
        finally:
            relay.close()


def relayed(relay: ModelRelay, api: str, requests: list[dict[str, Any]]) -> None:
    for number, request in enumerate(requests, 1):
        agent = Agent()
        relay.relay(api, orjson.dumps(request), f"run-a9e47-0:agent:{number}", MODEL, agent)
        assert agent.status == 200


def tool_call_chunk(index: int, call_id: str, name: str, arguments: str) -> dict[str, Any]:
    call = {"index": index, "function": {"arguments": arguments}}
    if call_id:
        call |= {"id": call_id, "type": "function"}
        call["function"]["name"] = name
    delta = {"role": "assistant", "tool_calls": [call]}
    return {"id": "cc", "object": "chat.completion.chunk", "created": 1, "model": MODEL,
            "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}  # fmt: skip


def chat_tool(name: str) -> dict[str, Any]:
    parameters = {"type": "object", "properties": {}}
    return {"type": "function", "function": {"name": name, "parameters": parameters}}


def test_a_streamed_chat_answer_is_the_answer(relay) -> None:
    upstream, recorded, model = relay
    usage = {"prompt_tokens": 30, "completion_tokens": 9, "total_tokens": 39}
    done = {"id": "cc", "object": "chat.completion.chunk", "created": 1, "model": MODEL,
            "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}  # fmt: skip
    upstream.answers.append(
        sse(
            tool_call_chunk(0, "call_a", "lab.evaluate", '{"attempt"'),
            tool_call_chunk(0, "", "", ": 1}"),
            done,
            {"id": "cc", "object": "chat.completion.chunk", "created": 1, "model": MODEL,
             "choices": [], "usage": usage},
        )
    )  # fmt: skip
    asked = [{"role": "system", "content": "a lab"}, {"role": "user", "content": "go"}]
    request = {"model": MODEL, "messages": asked, "tools": [chat_tool("lab.evaluate")]}
    relayed(model, "chat", [request | {"stream": True}])
    conversation, line = exported(recorded.events(), recorded.blobs.get)
    call = {
        "id": "call_a",
        "type": "function",
        "function": {"name": "lab__evaluate", "arguments": '{"attempt": 1}'},
    }
    assert conversation.messages == [
        *asked,
        {"role": "assistant", "content": "", "tool_calls": [call]},
    ]
    assert [t["function"]["name"] for t in line["tools"]] == ["lab__evaluate"]
    ((shown, output),) = model_events(recorded.events(), recorded.blobs.get)
    assert shown == inspect_messages(asked)
    assert output["choices"][0]["message"]["tool_calls"][0]["function"] == "lab__evaluate"
    assert output["choices"][0]["stop_reason"] == "tool_calls"
    assert output["usage"]["input_tokens"] == 30


CODEX_TOOLS = [
    {"type": "function", "name": "exec_command", "description": "Run a command.",
     "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}},
                    "required": ["cmd"]}, "strict": False},
    {"type": "namespace", "name": "mcp__lab", "description": "The lab.",
     "tools": [{"type": "function", "name": "budget", "description": "What is left.",
                "parameters": {"type": "object", "properties": {}}}]},
    {"type": "custom", "name": "apply_patch", "description": "Patch files.",
     "format": {"type": "grammar", "syntax": "lark", "definition": "start: /.+/"}},
    {"type": "web_search"},
]  # fmt: skip
"""Tools as Codex CLI declares them: a function, its MCP server as a `namespace` tool,
a free-form (`custom`) tool, a built-in one."""
EXPECTED_TOOLS = {
    "exec_command": CODEX_TOOLS[0]["parameters"],
    "mcp__lab__budget": {"type": "object", "properties": {}},
    "apply_patch": {
        "type": "object",
        "properties": {"input": {"type": "string"}},
        "required": ["input"],
    },
}
FIRST_INPUT = [
    {"type": "message", "role": "developer",
     "content": [{"type": "input_text", "text": "Sandbox: workspace-write."}]},
    {"type": "message", "role": "user",
     "content": [{"type": "input_text", "text": "Read TASK.md"},
                 {"type": "input_text", "text": " and work."}]},
]  # fmt: skip


def codex_request(items: list[dict[str, Any]], streamed: bool) -> dict[str, Any]:
    return {
        "model": MODEL,
        "instructions": "You are Codex.",
        "input": [*FIRST_INPUT, *items],
        "tools": CODEX_TOOLS,
        "tool_choice": "auto",
        "store": False,
        "stream": streamed,
    }


def responses_answer(items: list[dict[str, Any]]) -> dict[str, Any]:
    return {"id": "resp_1", "object": "response", "created_at": 1, "status": "completed",
            "model": MODEL, "output": items, "usage": responses_usage(200, 20)}  # fmt: skip


def test_a_responses_exchange_with_function_calls_is_its_items_as_messages(relay) -> None:
    upstream, recorded, model = relay
    reasoning = {"type": "reasoning", "id": "rs_1", "summary": []}
    said = message_item("msg_1", "Reading the task.")
    shell = call_item("fc_1", "call_1", "exec_command", {"cmd": "cat TASK.md"})
    patch = {"type": "custom_tool_call", "id": "ct_1", "call_id": "call_2",
             "name": "apply_patch", "input": "*** Begin Patch"}  # fmt: skip
    budget = call_item("fc_3", "call_3", "mcp__lab.budget", {})
    upstream.answers.append(
        Canned(body=orjson.dumps(responses_answer([reasoning, said, shell, patch])))
    )
    upstream.answers.append(Canned(body=orjson.dumps(responses_answer([reasoning, budget]))))
    history = [
        reasoning,
        said,
        shell,
        patch,
        {"type": "function_call_output", "call_id": "call_1", "output": "# Task"},
        {"type": "custom_tool_call_output", "call_id": "call_2",
         "output": [{"type": "input_text", "text": "Done!"}]},
    ]  # fmt: skip
    relayed(model, "responses", [codex_request([], False), codex_request(history, False)])
    conversation, line = exported(recorded.events(), recorded.blobs.get)
    calls = [
        {"id": "call_1", "type": "function",
         "function": {"name": "exec_command", "arguments": '{"cmd": "cat TASK.md"}'}},
        {"id": "call_2", "type": "function",
         "function": {"name": "apply_patch", "arguments": '{"input":"*** Begin Patch"}'}},
    ]  # fmt: skip
    budget_call = {
        "id": "call_3",
        "type": "function",
        "function": {"name": "mcp__lab__budget", "arguments": "{}"},
    }
    assert conversation.messages == [
        {"role": "system", "content": "You are Codex."},
        {"role": "developer", "content": "Sandbox: workspace-write."},
        {"role": "user", "content": "Read TASK.md and work."},
        {"role": "assistant", "content": "Reading the task.", "tool_calls": calls},
        {"role": "tool", "tool_call_id": "call_1", "content": "# Task"},
        {"role": "tool", "tool_call_id": "call_2", "content": "Done!"},
        {"role": "assistant", "content": None, "tool_calls": [budget_call]},
    ]
    declared = {t["function"]["name"]: t["function"]["parameters"] for t in line["tools"]}
    assert declared == EXPECTED_TOOLS
    assert [m["role"] for m in line["messages"]][:2] == ["system", "system"]
    first, second = model_events(recorded.events(), recorded.blobs.get)
    assert [m["role"] for m in first[0]] == ["system", "system", "user"]
    assert first[1]["completion"] == "Reading the task."
    assert [c["function"] for c in first[1]["choices"][0]["message"]["tool_calls"]] == [
        "exec_command",
        "apply_patch",
    ]
    assert second[0] == inspect_messages(conversation.messages[:-1])
    assert second[1]["choices"][0]["message"]["tool_calls"][0]["function"] == "mcp__lab__budget"
    assert second[1]["usage"]["input_tokens"] == 200


def test_a_streamed_responses_answer_as_codex_reads_it(relay) -> None:
    upstream, recorded, model = relay
    shell = call_item("fc_1", "call_1", "exec_command", {"cmd": "lab evaluate"})
    budget = call_item("fc_2", "call_2", "mcp__lab.budget", {})
    final = message_item("msg_3", "Measured and finished.")
    for number, items in enumerate([[shell], [budget], [final]], 1):
        usage = responses_usage(1000 * number, 10 * number)
        scripted = stream(f"resp_{number}", MODEL, items, usage)
        assert isinstance(scripted.body, str)
        upstream.answers.append(Canned(body=scripted.body.encode(), headers=scripted.headers))
    outputs = [
        {"type": "function_call_output", "call_id": "call_1", "output": "attempt 1: 0.9"},
        {"type": "function_call_output", "call_id": "call_2",
         "output": [{"type": "input_text", "text": "$0.50 left"}]},
    ]  # fmt: skip
    requests = [
        codex_request([], True),
        codex_request([shell, outputs[0]], True),
        codex_request([shell, outputs[0], budget, outputs[1]], True),
    ]
    relayed(model, "responses", requests)
    stored = recorded.blobs[recorded.payloads[-1].response.sha256]  # type: ignore[union-attr]
    assert stored.startswith(b"event: response.created\ndata: "), "kept as it was streamed"
    conversation, line = exported(recorded.events(), recorded.blobs.get)
    assert [m["role"] for m in conversation.messages] == [
        "system", "developer", "user", "assistant", "tool", "assistant", "tool", "assistant",
    ]  # fmt: skip
    names = [c["function"]["name"] for m in line["messages"] for c in m.get("tool_calls", [])]
    assert names == ["exec_command", "mcp__lab__budget"]
    assert conversation.messages[-1] == {"role": "assistant", "content": "Measured and finished."}
    assert conversation.messages[6] == {
        "role": "tool",
        "tool_call_id": "call_2",
        "content": "$0.50 left",
    }
    shown = model_events(recorded.events(), recorded.blobs.get)
    assert [len(given) for given, _ in shown] == [3, 5, 7]
    assert [output["completion"] for _, output in shown][2] == "Measured and finished."
    calls = [output["choices"][0]["message"].get("tool_calls") for _, output in shown]
    assert [c[0]["function"] if c else None for c in calls] == [
        "exec_command",
        "mcp__lab__budget",
        None,
    ]
    assert [output["usage"]["input_tokens"] for _, output in shown] == [1000, 2000, 3000]


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("evaluate", "evaluate"),
        ("mcp__lab.evaluate", "mcp__lab__evaluate"),
        ("a b/c", "a__b__c"),
        ("", "unnamed"),
    ],
)
def test_a_tool_name_becomes_a_valid_function_name(name: str, expected: str) -> None:
    assert function_name(name) == expected


def test_a_long_tool_name_is_cut_with_its_digest() -> None:
    long_name = "ns." + "x" * 80
    mapped = function_name(long_name)
    assert len(mapped) == 64 and mapped.startswith("ns__xxx")
    assert mapped == function_name(long_name) and mapped != function_name(long_name + "y")
    assert json.dumps(mapped).isascii()
