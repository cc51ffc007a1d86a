"""Reported tool calls found in an agent's next request (`workers.agent.reported`)."""

import orjson

from workers.agent.reported import Pending, results


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
