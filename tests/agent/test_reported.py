"""Reported tool calls found in an agent's next request (`workers.agent.reported`)."""

import json

import orjson
import pytest

from tests.agent.codex_server import call_item, responses_usage, stream
from workers.agent.answers import Unreadable, read_answer
from workers.agent.reported import Pending, invoked, results


def test_a_reused_call_id_is_answered_by_the_latest_tool_message() -> None:
    # Servers reuse their ids from one answer to the next: the whole conversation comes
    # back with each request, so the first `call_1` is an earlier call's result.
    body = orjson.dumps(
        {
            "messages": [
                {"role": "assistant", "tool_calls": [{"id": "call_1"}]},
                {"role": "tool", "tool_call_id": "call_1", "content": "attempt 1"},
                {"role": "assistant", "tool_calls": [{"id": "call_1"}, {"id": "call_2"}]},
                {"role": "tool", "tool_call_id": "call_1", "content": "attempt 2"},
                {"role": "tool", "tool_call_id": "call_2", "content": "submitted"},
            ]
        }
    )
    pending = [
        Pending("call_1@5", "call_1", "evaluate", 0.0),
        Pending("call_2@5", "call_2", "submit_paper", 0.0),
    ]
    found = results("chat", body, pending)
    assert [(r.pending.call_id, r.output) for r in found] == [
        ("call_1@5", "attempt 2"),
        ("call_2@5", "submitted"),
    ]


def test_responses_api_calls_are_reported_with_their_namespace_and_outputs() -> None:
    # Codex CLI: a shell call and a call of its MCP server's tool (a `namespace` tool);
    # the next request answers each by its call_id, as text or as content parts.
    answer = read_answer(
        "responses",
        orjson.dumps(
            {
                "model": "m",
                "output": [
                    {
                        "type": "function_call",
                        "id": "fc_1",
                        "call_id": "call_1",
                        "name": "exec_command",
                        "arguments": '{"cmd": "lab evaluate"}',
                    },
                    {
                        "type": "function_call",
                        "id": "fc_2",
                        "call_id": "call_2",
                        "namespace": "mcp__lab",
                        "name": "budget",
                        "arguments": "{}",
                    },
                ],
                "usage": {"input_tokens": 10, "output_tokens": 2},
            }
        ),
        streamed=False,
    )
    events, pending = invoked("functions", answer, "r:1", now=0.0)
    assert [(e.tool, e.args, e.reported) for e in events] == [
        ("exec_command", {"cmd": "lab evaluate"}, True),
        ("mcp__lab.budget", {}, True),
    ]
    body = orjson.dumps(
        {
            "input": [
                {"type": "function_call_output", "call_id": "call_1", "output": "attempt 1"},
                {
                    "type": "function_call_output",
                    "call_id": "call_2",
                    "output": [
                        {"type": "input_text", "text": "Output:"},
                        {"type": "input_text", "text": "attempts: 19 left"},
                    ],
                },
            ]
        }
    )
    found = results("responses", body, pending)
    assert [(r.pending.tool, r.output) for r in found] == [
        ("exec_command", "attempt 1"),
        ("mcp__lab.budget", "Output:attempts: 19 left"),
    ]


def test_a_streamed_call_is_read_from_its_item_events_when_the_last_event_lists_none() -> None:
    # Codex acts on `response.output_item.done`; a server may send `response.completed`
    # with an empty `output`. The call and the usage are read all the same.
    call = call_item("fc_1", "call_1", "exec_command", {"cmd": "lab evaluate"})
    sent = stream("resp_1", "m", [call], responses_usage(120, 8)).body
    assert isinstance(sent, str)
    emptied = sent.replace(json.dumps([call]), "[]")
    assert emptied != sent
    for body in (sent, emptied):
        answer = read_answer("responses", body.encode(), streamed=True)
        assert [(c.id, c.name) for c in answer.calls] == [("call_1", "exec_command")]
        assert answer.usage is not None and answer.usage.input_tokens == 120


def test_usage_details_that_are_not_objects_count_nothing_and_break_nothing() -> None:
    """A provider's malformed details (a number, a string) are read as no details: the
    relay must still record the call's outcome."""
    chat = {
        "choices": [{"message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 7, "completion_tokens": 3, "prompt_tokens_details": "x"},
    }
    answer = read_answer("chat", orjson.dumps(chat), False)
    assert answer.usage is not None and answer.usage.input_tokens == 7
    assert answer.usage.cached_input_tokens == 0
    responses = {"output": [], "usage": {"input_tokens": 5, "output_tokens": 2,
                                         "input_tokens_details": 5}}  # fmt: skip
    answer = read_answer("responses", orjson.dumps(responses), False)
    assert answer.usage is not None and answer.usage.output_tokens == 2


def test_a_messages_api_answer_counts_its_cache_as_input_and_reports_its_tool_use() -> None:
    message = {
        "type": "message", "model": "claude-x", "stop_reason": "tool_use",
        "content": [{"type": "text", "text": "ok"},
                    {"type": "tool_use", "id": "toolu_1", "name": "Bash",
                     "input": {"command": "ls"}}],
        "usage": {"input_tokens": 4, "output_tokens": 9, "cache_read_input_tokens": 60,
                  "cache_creation_input_tokens": None},
    }  # fmt: skip
    answer = read_answer("messages", orjson.dumps(message), False)
    assert answer.usage is not None
    assert (answer.usage.input_tokens, answer.usage.cached_input_tokens) == (64, 60)
    assert answer.text == "ok" and answer.finish_reason == "tool_use"
    events, pending = invoked("functions", answer, "r:1")
    assert [(e.tool, e.args) for e in events] == [("Bash", {"command": "ls"})]
    # The conversation comes back whole: the latest tool_result for the id is its result.
    again = {"messages": [
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                      "content": "older"}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                      "content": "a b"}]},
    ]}  # fmt: skip
    (result,) = results("messages", orjson.dumps(again), pending)
    assert result.output == "a b"
    # No usage, or one without its counts, is no usage (the cost unknown, never 0).
    del message["usage"]
    assert read_answer("messages", orjson.dumps(message), False).usage is None
    stream = b'event: message_start\ndata: {"type": "message_start", "message": {}}\n\n'
    assert read_answer("messages", stream, True).usage is None


def test_a_stream_with_no_message_start_is_unreadable() -> None:
    stream = b'event: ping\ndata: {"type": "ping"}\n\n'
    with pytest.raises(Unreadable):
        read_answer("messages", stream, True)
    with pytest.raises(Unreadable):
        read_answer("messages", b'{"error": "x"}', False)
