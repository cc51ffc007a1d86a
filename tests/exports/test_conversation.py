"""A run's conversation from its log (`projections.exports.conversation`) on hand-made
runs: the last answered call's request and answer (a later failed call, or one whose
blobs the log lost, changes nothing), the tools of every request, each once as last
declared; a run of neither model nor tool calls has none. And the Inspect form of its
messages: a tool message names the function of the call it answers, arguments that are
not a JSON object are kept whole with the reason."""

from typing import Any

import orjson

from events import Event
from events.blobs import blob_ref
from events.ids import new_id, utcnow
from events.payloads import ModelCalled, ModelFailed, ModelResponded, Payload, RunStarted
from projections.exports.conversation import conversation_of, exchanges
from projections.exports.inspect_messages import inspect_messages

STREAM = "run-c0ffee-0"


def tool(name: str, description: str) -> dict[str, Any]:
    parameters = {"type": "object", "properties": {}}
    return {
        "type": "function",
        "function": {"name": name, "description": description, "parameters": parameters},
    }


class Log:
    """A run's events and blobs, made by hand."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.blobs: dict[str, bytes] = {}
        self.add(RunStarted(task="t", lab="lab-0", policy="agent"))

    def add(self, payload: Payload) -> None:
        event = Event(
            id=new_id(), stream=STREAM, version=len(self.events), occurred_at=utcnow(),
            payload=payload,
        )  # fmt: skip
        self.events.append(event)

    def blob(self, value: Any, keep: bool = True) -> Any:
        data = orjson.dumps(value)
        if keep:
            self.blobs[blob_ref(data).sha256] = data
        return blob_ref(data)

    def call(
        self, n: int, request: dict[str, Any], answer: dict[str, Any] | None, keep: bool = True
    ) -> None:
        called = ModelCalled(
            call_id=f"c{n}", request_id=f"r{n}", attempt=1, model="m", provider="p",
            messages=len(request["messages"]), request=self.blob(request),
        )  # fmt: skip
        self.add(called)
        if answer is None:
            failed = ModelFailed(call_id=f"c{n}", error="timeout", latency_s=1, will_retry=False)
            self.add(failed)
            return
        response = {"model": "m", "choices": [{"message": answer, "finish_reason": "stop"}]}
        responded = ModelResponded(
            call_id=f"c{n}", model="m", usage=None, latency_s=0.5, price=None,
            cost_usd=None, cost_known=False, response=self.blob(response, keep),
        )  # fmt: skip
        self.add(responded)


def test_the_last_answered_call_is_the_conversation() -> None:
    log = Log()
    first = [{"role": "developer", "content": "be brief"}, {"role": "user", "content": "go"}]
    called = {"id": "a1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
    answer = {"role": "assistant", "content": None, "tool_calls": [called]}
    log.call(1, {"messages": first, "tools": [tool("ls", "old"), tool("cat", "")]}, answer)
    second = [*first, answer, {"role": "tool", "tool_call_id": "a1", "content": "x.py"}]
    done = {"role": "assistant", "content": "done"}
    log.call(2, {"messages": second, "tools": [tool("ls", "new"), tool("rm", "")]}, done)
    log.call(3, {"messages": [*second, done]}, None)  # failed
    log.call(4, {"messages": [*second, done]}, {"role": "assistant", "content": "lost"}, False)
    answered = exchanges(log.events, log.blobs.get)
    assert [e.called.call_id for e in answered] == ["c1", "c2"]
    conversation = conversation_of(log.events, answered, log.blobs.get)
    assert conversation.source == "model"
    assert conversation.messages == [*second, done]
    declared = {t["function"]["name"]: t["function"]["description"] for t in conversation.tools}
    assert declared == {"ls": "new", "cat": "", "rm": ""}
    shown = inspect_messages(conversation.messages, "m")
    assert [m["role"] for m in shown] == ["system", "user", "assistant", "tool", "assistant"]
    assert shown[3]["function"] == "ls" and shown[3]["tool_call_id"] == "a1"
    assert shown[2]["tool_calls"] == [
        {"id": "a1", "function": "ls", "type": "function", "arguments": {}}
    ]


def test_arguments_that_are_no_object_are_kept_with_the_reason() -> None:
    calls = [
        {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{oops"}},
        {"id": "b", "type": "function", "function": {"name": "f", "arguments": "[1]"}},
    ]
    (shown,) = inspect_messages([{"role": "assistant", "content": "", "tool_calls": calls}])
    assert [c["arguments"] for c in shown["tool_calls"]] == [{"raw": "{oops"}, {"raw": "[1]"}]
    assert all(c["parse_error"] for c in shown["tool_calls"])


def test_a_run_of_no_call_has_no_conversation() -> None:
    log = Log()
    conversation = conversation_of(log.events, [], log.blobs.get)
    assert (conversation.messages, conversation.tools, conversation.source) == ([], [], "none")
