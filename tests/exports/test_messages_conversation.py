"""An agent run that speaks Anthropic's Messages API (Claude Code through the relay), its
exports read from the calls the real relay recorded against a scripted provider: the
conversation in chat form (`system`, text blocks, `tool_use` and `tool_result` blocks
as tool calls and `tool` messages), its fine-tuning line in OpenAI's format, Inspect's
model events (stop reasons, usage with the cache), the OTel tokens; and the same from a
log written before `model.called` recorded its API (the API told by the request's shape,
or by its answer's)."""

from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from events import Event
from events.payloads import ModelCalled, ModelResponded
from projections.exports.otel_attributes import outcome_attributes
from tests.agent.upstream import Canned, Upstream
from tests.exports.agent_export import exported, model_events
from tests.exports.test_agent_conversation import Agent, Recorded
from workers.agent.relay import ModelRelay
from workers.llm.prices import PriceTable

MODEL = "claude-test-1"
SYSTEM = [{"type": "text", "text": "You are Claude Code."}, {"type": "text", "text": " Be brief."}]
TOOLS = [
    {"name": "Bash", "description": "Run a command.",
     "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}}},
    {"name": "mcp__lab__evaluate", "description": "Grade the solution.",
     "input_schema": {"type": "object", "properties": {}}},
    {"type": "web_search_20250305", "name": "web_search", "max_uses": 2},
]  # fmt: skip
USAGE = {"input_tokens": 12, "output_tokens": 40, "cache_read_input_tokens": 3000,
         "cache_creation_input_tokens": 500}  # fmt: skip


def message(content: list[dict[str, Any]], stop: str | None, usage: dict[str, int]) -> dict:
    return {"id": "msg_1", "type": "message", "role": "assistant", "model": MODEL,
            "content": content, "stop_reason": stop, "stop_sequence": None,
            "usage": usage}  # fmt: skip


def event_stream(*events: dict[str, Any]) -> Canned:
    text = "".join(f"event: {e['type']}\ndata: {orjson.dumps(e).decode()}\n\n" for e in events)
    return Canned(body=text.encode(), headers={"content-type": "text/event-stream"})


FIRST_ANSWER = event_stream(
    {"type": "message_start",
     "message": message([], None, {"input_tokens": 25, "output_tokens": 1})},
    {"type": "content_block_start", "index": 0,
     "content_block": {"type": "thinking", "thinking": ""}},
    {"type": "content_block_delta", "index": 0,
     "delta": {"type": "thinking_delta", "thinking": "hm"}},
    {"type": "content_block_stop", "index": 0},
    {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}},
    {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "Let me "}},
    {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "look."}},
    {"type": "content_block_stop", "index": 1},
    {"type": "content_block_start", "index": 2,
     "content_block": {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {}}},
    {"type": "content_block_delta", "index": 2,
     "delta": {"type": "input_json_delta", "partial_json": '{"command": '}},
    {"type": "content_block_delta", "index": 2,
     "delta": {"type": "input_json_delta", "partial_json": '"ls"}'}},
    {"type": "content_block_stop", "index": 2},
    {"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": None},
     "usage": {"output_tokens": 30}},
    {"type": "message_stop"},
)  # fmt: skip
SAID = [
    {"type": "thinking", "thinking": "hm", "signature": "sig"},
    {"type": "text", "text": "Let me look."},
    {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}},
]
FOLLOWING = [
    {"role": "user", "content": "Read TASK.md and work."},
    {"role": "assistant", "content": SAID},
    {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_1",
         "content": [{"type": "text", "text": "TASK.md"}]},
        {"type": "text", "text": "go on"},
    ]},
]  # fmt: skip
LAST = [{"type": "tool_use", "id": "toolu_2", "name": "mcp__lab__evaluate", "input": {}}]


def claude_request(messages: list[dict[str, Any]], streamed: bool) -> dict[str, Any]:
    return {"model": MODEL, "max_tokens": 1024, "system": SYSTEM, "messages": messages,
            "tools": TOOLS, "stream": streamed}  # fmt: skip


@pytest.fixture
def recorded() -> Iterator[Recorded]:
    """A Claude Code-like run of two calls recorded by the relay: a streamed answer with
    thinking, text and a `tool_use`; then, after its `tool_result`, a whole answer that
    calls the lab's tool, with cache reads and writes in its usage."""
    with Upstream() as upstream:
        found = Recorded()
        relay = ModelRelay(upstream.url, "sk-ant-export-test", PriceTable.load(), found)
        upstream.answers.append(FIRST_ANSWER)
        upstream.answers.append(Canned(body=orjson.dumps(message(LAST, "tool_use", USAGE))))
        first = claude_request(FOLLOWING[:1], True)
        try:
            for number, request in enumerate([first, claude_request(FOLLOWING, False)], 1):
                agent = Agent()
                body = orjson.dumps(request)
                relay.relay("messages", body, f"run-a9e47-0:agent:{number}", MODEL, agent)
                assert agent.status == 200
        finally:
            relay.close()
        yield found


CALL_1 = {"id": "toolu_1", "type": "function",
          "function": {"name": "Bash", "arguments": '{"command":"ls"}'}}  # fmt: skip
CALL_2 = {"id": "toolu_2", "type": "function",
          "function": {"name": "mcp__lab__evaluate", "arguments": "{}"}}  # fmt: skip
MESSAGES = [
    {"role": "system", "content": "You are Claude Code. Be brief."},
    {"role": "user", "content": "Read TASK.md and work."},
    {"role": "assistant", "content": "Let me look.", "tool_calls": [CALL_1]},
    {"role": "tool", "tool_call_id": "toolu_1", "content": "TASK.md"},
    {"role": "user", "content": "go on"},
    {"role": "assistant", "content": None, "tool_calls": [CALL_2]},
]


def check(events: list[Event], read: Any) -> None:
    conversation, line = exported(events, read)
    assert conversation.messages == MESSAGES
    assert [t["function"]["name"] for t in line["tools"]] == ["Bash", "mcp__lab__evaluate"]
    assert line["tools"][0]["function"]["parameters"] == TOOLS[0]["input_schema"]
    assert line["tools"][0]["function"]["description"] == "Run a command."
    (first, first_out), (second, second_out) = model_events(events, read)
    assert [m["role"] for m in second] == ["system", "user", "assistant", "tool", "user"]
    assert first_out["choices"][0]["stop_reason"] == "tool_calls"
    assert first_out["choices"][0]["message"]["tool_calls"][0]["function"] == "Bash"
    assert second_out["usage"]["input_tokens"] == 12 + 3000 + 500
    assert second_out["usage"]["input_tokens_cache_read"] == 3000
    assert second_out["usage"]["input_tokens_cache_write"] == 500
    assert first_out["usage"]["input_tokens"] == 25 and first_out["usage"]["output_tokens"] == 30


def test_a_messages_api_run_is_exported_in_chat_form(recorded: Recorded) -> None:
    events = recorded.events()
    called = [e.payload for e in events if isinstance(e.payload, ModelCalled)]
    assert [c.api for c in called] == ["messages", "messages"]
    check(events, recorded.blobs.get)


def test_an_old_log_is_told_the_messages_api_by_its_requests_or_answers(
    recorded: Recorded,
) -> None:
    blobs = dict(recorded.blobs)
    events = []
    for event in recorded.events():
        payload = event.payload
        if isinstance(payload, ModelCalled):
            payload = payload.model_copy(update={"api": None})
        events.append(event.model_copy(update={"payload": payload}))
    check(events, blobs.get)
    # A request with neither `system` nor tools nor blocks reads as a chat request: its
    # answer tells the Messages API.
    bare = {"model": MODEL, "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]}
    for event in events:
        if isinstance(event.payload, ModelCalled):
            asked = event.payload.request
            assert asked is not None
            streamed = orjson.loads(blobs[asked.sha256])["stream"]
            blobs[asked.sha256] = orjson.dumps(bare | {"stream": streamed})
    conversation, _ = exported(events, blobs.get)
    assert conversation.messages == [{"role": "user", "content": "hi"}, MESSAGES[-1]]


def test_otel_counts_a_messages_calls_cache_as_the_conventions_define_it(
    recorded: Recorded,
) -> None:
    responded = [p for p in recorded.payloads if isinstance(p, ModelResponded)]
    attributes = outcome_attributes(responded[-1])
    assert attributes["gen_ai.usage.input_tokens"] == 12 + 3000 + 500
    assert attributes["gen_ai.usage.cache_read.input_tokens"] == 3000
    assert attributes["gen_ai.usage.cache_creation.input_tokens"] == 500
    assert attributes["gen_ai.usage.output_tokens"] == 40
    assert attributes["gen_ai.response.finish_reasons"] == ("tool_use",)
