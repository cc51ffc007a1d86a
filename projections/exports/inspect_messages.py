"""OpenAI chat messages and tool declarations as Inspect AI reads them
(`inspect_ai.model.ChatMessage*`, `inspect_ai.tool.ToolInfo`), field for field.

An assistant's tool call becomes Inspect's `ToolCall` (`id`, `function`, `arguments` as
an object, `type`); arguments that are not a JSON object are kept as `{"raw": text}`
with the reason in `parse_error`. A `tool` message names its function, found from the
call it answers. A text-only content list becomes Inspect's text contents.
"""

from collections.abc import Sequence
from typing import Any

import orjson

from projections.exports.message import Message

STOP_REASONS = {
    "stop": "stop",
    "length": "max_tokens",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "content_filter": "content_filter",
}
"""OpenAI's `finish_reason` as Inspect's `stop_reason` (any other is `unknown`)."""


def inspect_messages(messages: Sequence[Message], model: str | None = None) -> list[Message]:
    """`messages` as Inspect chat messages (`model`: the one that wrote the assistant's)."""
    functions: dict[str, str] = {}
    converted = []
    for message in messages:
        role = message.get("role")
        if role == "assistant":
            calls = [tool_call(c) for c in message.get("tool_calls") or []]
            functions |= {c["id"]: c["function"] for c in calls}
            item: Message = {"role": "assistant", "content": _content(message.get("content"))}
            if calls:
                item["tool_calls"] = calls
            if model is not None:
                item["model"] = model
        elif role == "tool":
            call_id = str(message.get("tool_call_id") or "")
            item = {
                "role": "tool",
                "content": _content(message.get("content")),
                "tool_call_id": call_id,
                "function": functions.get(call_id),
            }
        else:
            item = {
                "role": "system" if role in ("system", "developer") else "user",
                "content": _content(message.get("content")),
            }
        item["source"] = "generate" if role == "assistant" else "input"
        converted.append(item)
    return converted


def tool_call(call: Message) -> Message:
    """An OpenAI tool call as Inspect's `ToolCall`."""
    function = call.get("function") or {}
    raw = function.get("arguments") or "{}"
    found: Message = {
        "id": str(call.get("id") or ""),
        "function": str(function.get("name") or ""),
        "type": "function",
    }
    try:
        arguments = orjson.loads(raw) if isinstance(raw, str) else raw
    except orjson.JSONDecodeError as exc:
        return found | {"arguments": {"raw": raw}, "parse_error": f"not JSON: {exc}"}
    if not isinstance(arguments, dict):
        return found | {"arguments": {"raw": raw}, "parse_error": "not a JSON object"}
    return found | {"arguments": arguments}


def tool_infos(tools: Sequence[Message]) -> list[Message]:
    """OpenAI function declarations as Inspect's `ToolInfo` (name, description, parameters)."""
    infos = []
    for tool in tools:
        function = tool.get("function") or {}
        parameters = function.get("parameters") or {}
        infos.append(
            {
                "name": str(function.get("name") or ""),
                "description": str(function.get("description") or ""),
                "parameters": {
                    "type": "object",
                    "properties": parameters.get("properties") or {},
                    "required": list(parameters.get("required") or []),
                    "additionalProperties": parameters.get("additionalProperties", False),
                },
            }
        )
    return infos


def stop_reason(finish_reason: str | None) -> str:
    """Inspect's `stop_reason` for OpenAI's `finish_reason`."""
    return STOP_REASONS.get(finish_reason or "", "unknown")


def _content(content: Any) -> str | list[Message]:
    """A message's content as Inspect reads it: text, or a list of text contents."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return [
            {"type": "text", "text": str(part.get("text", ""))}
            if isinstance(part, dict) and part.get("type") == "text"
            else {"type": "text", "text": orjson.dumps(part).decode()}
            for part in content
        ]
    return orjson.dumps(content).decode()
