"""An Anthropic Messages API call in Chat Completions form: the request as `messages` and
`tools`, the answer as a chat completion, each tool name a valid OpenAI function name
(`projections.exports.function_names`).

A request's `system` (text, or text blocks joined) is a first `system` message; each of
its `messages` is read block by block: a user message's `tool_result` blocks are `tool`
messages (`tool_call_id`: the block's `tool_use_id`, content: its text or its text
blocks' joined), in order, before a `user` message of its other blocks' texts (none when
it has no text); an assistant message's text blocks joined are its content and its
`tool_use` blocks its tool calls (`id`: the block's id, arguments: its `input` as JSON).
Text content is a message as it is. Blocks with no text (images, documents) and
`thinking` blocks are left out. Its tools with an `input_schema` are chat functions
(name, description, parameters: the schema); Anthropic's server tools (`web_search_…`,
`bash_…`, declared by type without a schema) are left out.

An answer's `content` blocks are read the same way into one assistant message; its
`stop_reason` is a chat `finish_reason`: `end_turn` and `stop_sequence` are `stop`,
`tool_use` is `tool_calls`, `max_tokens` is `length`, `refusal` is `content_filter`,
any other is kept as it is. Its `usage` stays as Anthropic reports it.
"""

from typing import Any

import orjson

from projections.exports.function_names import function_name
from projections.exports.message import Message

FINISH_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "refusal": "content_filter",
}
"""A Messages API `stop_reason` as a chat completion's `finish_reason`."""


def request_messages(request: dict[str, Any]) -> dict[str, Any]:
    """A Messages API request body as `{"messages", "tools"}` in chat form."""
    messages: list[Message] = []
    system = _text(request.get("system"))
    if system:
        messages.append({"role": "system", "content": system})
    for message in request.get("messages") or []:
        if isinstance(message, dict):
            messages += _chat_messages(message)
    tools = [_function(t) for t in request.get("tools") or [] if isinstance(t, dict)]
    return {"messages": messages, "tools": [t for t in tools if t is not None]}


def answer_completion(message: dict[str, Any]) -> dict[str, Any]:
    """A Messages API answer (one message) as a chat completion."""
    said = _assistant(message.get("content"))
    stop = message.get("stop_reason")
    finish = FINISH_REASONS.get(stop, stop) if isinstance(stop, str) else None
    choice = {"index": 0, "message": said, "finish_reason": finish}
    return {"model": message.get("model"), "choices": [choice], "usage": message.get("usage")}


def _chat_messages(message: dict[str, Any]) -> list[Message]:
    role = message.get("role")
    content = message.get("content")
    if role == "assistant":
        return [_assistant(content)]
    if not isinstance(content, list):
        return [{"role": str(role or "user"), "content": _text(content)}]
    blocks = [b for b in content if isinstance(b, dict)]
    found: list[Message] = [
        {
            "role": "tool",
            "tool_call_id": str(b.get("tool_use_id") or ""),
            "content": _text(b.get("content")),
        }
        for b in blocks
        if b.get("type") == "tool_result"
    ]
    text = _text([b for b in blocks if b.get("type") == "text"])
    if text or not found:
        found.append({"role": str(role or "user"), "content": text})
    return found


def _assistant(content: Any) -> Message:
    """An assistant message's (or an answer's) content as one chat assistant message."""
    if not isinstance(content, list):
        return {"role": "assistant", "content": _text(content)}
    blocks = [b for b in content if isinstance(b, dict)]
    text = _text([b for b in blocks if b.get("type") == "text"])
    calls = [
        {
            "id": str(b.get("id") or ""),
            "type": "function",
            "function": {"name": function_name(str(b.get("name") or "")), "arguments": _json(b)},
        }
        for b in blocks
        if b.get("type") == "tool_use"
    ]
    message: Message = {"role": "assistant", "content": text or None}
    if calls:
        message["tool_calls"] = calls
    return message


def _json(block: dict[str, Any]) -> str:
    given = block.get("input")
    return given if isinstance(given, str) else orjson.dumps(given or {}).decode()


def _function(tool: dict[str, Any]) -> dict[str, Any] | None:
    if not isinstance(tool.get("input_schema"), dict):
        return None
    name = function_name(str(tool.get("name") or ""))
    function = {"name": name, "parameters": tool["input_schema"]}
    if isinstance(tool.get("description"), str):
        function["description"] = tool["description"]
    return {"type": "function", "function": function}


def _text(content: Any) -> str:
    """Text content, or text blocks' texts joined (other blocks left out)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [b for b in content if isinstance(b, dict) and b.get("type", "text") == "text"]
        return "".join(str(b["text"]) for b in texts if isinstance(b.get("text"), str))
    return ""
