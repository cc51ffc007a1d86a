"""OpenAI's chat fine-tuning format, checked with the `openai` package's own types: each
message by its role's param type and no key the type lacks, each tool call and tool a
function one named as OpenAI accepts (`^[a-zA-Z0-9_-]{1,64}$`), arguments a JSON object;
and every tool message answering a call."""

import re
from typing import Any, get_type_hints

import orjson
from openai.types.chat import (
    ChatCompletionAssistantMessageParam,
    ChatCompletionFunctionToolParam,
    ChatCompletionMessageFunctionToolCallParam,
    ChatCompletionSystemMessageParam,
    ChatCompletionToolMessageParam,
    ChatCompletionUserMessageParam,
)
from pydantic import TypeAdapter

ROLES: dict[str, Any] = {
    "system": ChatCompletionSystemMessageParam,
    "user": ChatCompletionUserMessageParam,
    "assistant": ChatCompletionAssistantMessageParam,
    "tool": ChatCompletionToolMessageParam,
}
FUNCTION_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
"""What OpenAI accepts as a function's name."""
WEIGHT = {"weight"}
"""The one key fine-tuning adds to a chat message (0 or 1, on assistant messages)."""


def validate(line: dict[str, Any]) -> None:
    """Raise unless `line` is one example of OpenAI's chat fine-tuning format."""
    assert set(line) <= {"messages", "tools", "parallel_tool_calls"}, sorted(line)
    for message in line["messages"]:
        kind = ROLES[message["role"]]
        TypeAdapter(kind).validate_python(message)
        assert set(message) <= set(get_type_hints(kind)) | WEIGHT, message
        for call in message.get("tool_calls") or []:
            TypeAdapter(ChatCompletionMessageFunctionToolCallParam).validate_python(call)
            assert set(call) == set(get_type_hints(ChatCompletionMessageFunctionToolCallParam))
            assert isinstance(orjson.loads(call["function"]["arguments"]), dict)
            assert FUNCTION_NAME.match(call["function"]["name"]), call
    for tool in line.get("tools", []):
        TypeAdapter(ChatCompletionFunctionToolParam).validate_python(tool)
        assert set(tool) == set(get_type_hints(ChatCompletionFunctionToolParam))
        assert FUNCTION_NAME.match(tool["function"]["name"]), tool


def paired(messages: list[dict[str, Any]]) -> None:
    """Every tool message answers an earlier call not yet answered; every call but those
    of the last message is answered."""
    open_calls: set[str] = set()
    for message in messages:
        if message["role"] == "tool":
            assert message["tool_call_id"] in open_calls, message
            open_calls.discard(message["tool_call_id"])
        elif message["role"] == "assistant":
            assert not open_calls, f"calls {open_calls} unanswered before the next answer"
            open_calls = {c["id"] for c in message.get("tool_calls") or []}
