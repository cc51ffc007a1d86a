"""A model call of either API (Chat Completions or Responses) in Chat Completions form:
the request as `messages` and `tools`, the answer as a chat completion, each tool name a
valid OpenAI function name (`projections.exports.function_names`).

A Responses request's `instructions` are a first `system` message; its `input` (text: a
`user` message) is read item by item: a `message` item is a message of its role, its
content parts' texts joined (`input_text`, `output_text`; parts without text are left
out); a `function_call` item is a tool call (`id`: its `call_id`, its name
`namespace.name` for a tool of a `namespace` tool) of the assistant message before it
when that one is the assistant's, else of a new one; a `custom_tool_call` item likewise,
its `input` as the arguments `{"input": ...}`; a `function_call_output` or
`custom_tool_call_output` item is a `tool` message (`tool_call_id`: its `call_id`). Other
items (`reasoning`, a web search's) are left out. Its `function` tools are declared as
chat functions, a `namespace` tool's functions each as `namespace.name`, a `custom` tool
as a function of one string argument `input`; other tools (built-in ones) are left out.
A Responses answer's `output` items are read the same way, into one assistant message.
An Anthropic Messages API call is read by `projections.exports.messages_form`.
"""

from collections.abc import Sequence
from typing import Any

import orjson

from projections.exports.function_names import function_name
from projections.exports.message import Message
from projections.exports.messages_form import answer_completion, request_messages

CUSTOM_PARAMETERS = {
    "type": "object",
    "properties": {"input": {"type": "string"}},
    "required": ["input"],
}
"""The arguments of a `custom` (free-form) tool declared as a function."""


def chat_request(api: str, request: dict[str, Any]) -> dict[str, Any]:
    """`request` (a body sent to `api`: `chat`, `responses` or `messages`) as
    `{"messages", "tools"}`."""
    if api == "messages":
        return request_messages(request)
    if api == "chat":
        messages = [_renamed(m) for m in request.get("messages") or [] if isinstance(m, dict)]
        tools = [_chat_tool(t) for t in request.get("tools") or [] if isinstance(t, dict)]
        return {"messages": messages, "tools": [t for t in tools if t is not None]}
    messages = []
    if isinstance(request.get("instructions"), str) and request["instructions"]:
        messages.append({"role": "system", "content": request["instructions"]})
    given = request.get("input")
    if isinstance(given, str):
        messages.append({"role": "user", "content": given})
    elif isinstance(given, list):
        messages += chat_messages(given)
    tools = [f for t in request.get("tools") or [] if isinstance(t, dict) for f in _functions(t)]
    return {"messages": messages, "tools": tools}


def chat_answer(api: str, response: dict[str, Any]) -> dict[str, Any]:
    """`response` (an answer of `api`, as one JSON object) as a chat completion."""
    if api == "messages":
        return answer_completion(response)
    if api == "chat":
        choices = response.get("choices") or []
        first = choices[0] if choices and isinstance(choices[0], dict) else {}
        given = _renamed(first.get("message") or {"role": "assistant", "content": None})
        return response | {"choices": [first | {"message": given}]}
    found = chat_messages([i for i in response.get("output") or [] if isinstance(i, dict)])
    said = [m for m in found if m.get("role") == "assistant"]
    texts = [m["content"] for m in said if isinstance(m.get("content"), str) and m["content"]]
    calls = [call for m in said for call in m.get("tool_calls") or []]
    message: Message = {"role": "assistant", "content": "".join(texts) or None}
    if calls:
        message["tool_calls"] = calls
    finish = "tool_calls" if calls else _finish(response)
    choice = {"index": 0, "message": message, "finish_reason": finish}
    return {"model": response.get("model"), "choices": [choice], "usage": response.get("usage")}


def chat_messages(items: Sequence[dict[str, Any]]) -> list[Message]:
    """Responses API items as chat messages (see the module's docstring)."""
    messages: list[Message] = []
    for item in items:
        kind = item.get("type", "message")
        if kind == "message" and isinstance(item.get("role"), str):
            messages.append({"role": item["role"], "content": _text(item.get("content"))})
        elif kind in ("function_call", "custom_tool_call"):
            call = _call(item)
            last = messages[-1] if messages else None
            if last is not None and last["role"] == "assistant":
                last.setdefault("tool_calls", []).append(call)
            else:
                messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        elif kind in ("function_call_output", "custom_tool_call_output"):
            call_id = str(item.get("call_id") or "")
            output = _text(item.get("output"))
            messages.append({"role": "tool", "tool_call_id": call_id, "content": output})
    return messages


def _call(item: dict[str, Any]) -> Message:
    name = str(item.get("name") or "")
    if isinstance(item.get("namespace"), str):
        name = f"{item['namespace']}.{name}"
    if item.get("type") == "custom_tool_call":
        arguments = orjson.dumps({"input": str(item.get("input") or "")}).decode()
    else:
        arguments = str(item.get("arguments") or "{}")
    function = {"name": function_name(name), "arguments": arguments}
    call_id = str(item.get("call_id") or item.get("id") or "")
    return {"id": call_id, "type": "function", "function": function}


def _functions(tool: dict[str, Any], namespace: str = "") -> list[dict[str, Any]]:
    """A Responses tool's declarations as chat function tools."""
    kind = tool.get("type")
    name = f"{namespace}{tool.get('name') or ''}"
    if kind == "namespace":
        inner = [t for t in tool.get("tools") or [] if isinstance(t, dict)]
        return [f for t in inner for f in _functions(t, f"{name}.")]
    if kind == "function":
        parameters = tool.get("parameters") or {"type": "object", "properties": {}}
    elif kind == "custom":
        parameters = CUSTOM_PARAMETERS
    else:
        return []
    function = {"name": function_name(name), "parameters": parameters}
    if isinstance(tool.get("description"), str):
        function["description"] = tool["description"]
    return [{"type": "function", "function": function}]


def _chat_tool(tool: dict[str, Any]) -> dict[str, Any] | None:
    """A chat tool declaration, its function renamed; None when it declares no function."""
    function = tool.get("function")
    if not isinstance(function, dict):
        return None
    return tool | {"function": function | {"name": function_name(str(function.get("name") or ""))}}


def _renamed(message: Message) -> Message:
    """A chat message, the functions its tool calls name renamed."""
    calls = message.get("tool_calls")
    if not isinstance(calls, list):
        return dict(message)
    renamed = []
    for call in calls:
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict):
            name = function_name(str(function.get("name") or ""))
            call = call | {"function": function | {"name": name}}
        renamed.append(call)
    return message | {"tool_calls": renamed}


def _text(content: Any) -> str:
    """A Responses content (text, or parts) as text: the parts' texts joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(part["text"])
            for part in content
            if isinstance(part, dict) and isinstance(part.get("text"), str)
        )
    return "" if content is None else orjson.dumps(content).decode()


def _finish(response: dict[str, Any]) -> str | None:
    """A Responses answer's `status` as a chat `finish_reason`."""
    if response.get("status") == "completed":
        return "stop"
    details = response.get("incomplete_details")
    if isinstance(details, dict) and details.get("reason") == "max_output_tokens":
        return "length"
    return response.get("status") if isinstance(response.get("status"), str) else None
