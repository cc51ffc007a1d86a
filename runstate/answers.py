"""A model's answer as one JSON object, whatever way it came: a chat completion, a
Responses API answer or an Anthropic Messages API answer, whole or streamed (server-sent
events), as the log keeps it (`model.responded`'s response blob) and as the agent relay
reads it.

A streamed chat completion is the completion its chunks add up to; a streamed Responses
answer is its `response.completed` (or `response.done`) event's response, else the last
response the stream carried, with its `output` taken from the stream's
`response.output_item.done` events when it holds none; a streamed Messages API answer is
the message its `message_start`, `content_block_*` and `message_delta` events add up to
(`runstate.message_stream`).
"""

from typing import Any

import orjson

from runstate.message_stream import message_from_events

APIS = ("chat", "responses", "messages")
"""The model APIs an answer may be of: Chat Completions, Responses, Anthropic Messages."""


class Unreadable(ValueError):
    """A 200 answer that is neither a chat completion nor a Responses API answer."""


def json_object(body: bytes, what: str, error: type[ValueError]) -> dict[str, Any]:
    """A model's answer `body` read as a JSON object; else `error`, saying that `what`
    (e.g. "the answer") is not one, with the start of `body`."""
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise error(f"{what} is not JSON ({exc}): {body[:200]!r}") from exc
    if not isinstance(data, dict):
        raise error(f"{what} is not a JSON object: {body[:200]!r}")
    return data


MESSAGES_BLOCKS = frozenset({"tool_use", "tool_result", "thinking", "redacted_thinking"})
"""Content block types only Anthropic's Messages API has."""


def request_api(
    request: dict[str, Any], body: bytes | None = None, recorded: str | None = None
) -> tuple[str, bool]:
    """The API a request was sent to and whether its answer was streamed (its `stream`
    flag). The API is `recorded` (`model.called`'s `api`) when the log says it; else read
    from the request's shape: `responses` when it has `input` and no `messages`;
    `messages` when it has a top-level `system`, a tool declared with `input_schema`, or
    a message with a `tool_use`, `tool_result` or `thinking` block; else from its answer
    `body` when given (a Messages API answer: `"type": "message"`, or a stream that
    opens with `message_start`); else `chat`."""
    streamed = request.get("stream") is True
    if recorded in APIS:
        return recorded, streamed
    if "input" in request and "messages" not in request:
        return "responses", streamed
    if _messages_shaped(request) or (body is not None and _message_answer(body, streamed)):
        return "messages", streamed
    return "chat", streamed


def _messages_shaped(request: dict[str, Any]) -> bool:
    if "system" in request:
        return True
    tools = request.get("tools") or []
    if any(isinstance(t, dict) and "input_schema" in t for t in tools):
        return True
    for message in request.get("messages") or []:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list) and any(
            isinstance(b, dict) and b.get("type") in MESSAGES_BLOCKS for b in content
        ):
            return True
    return False


def _message_answer(body: bytes, streamed: bool) -> bool:
    if streamed:
        return any(c.get("type") == "message_start" for c in sse_data(body))
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        return False
    return isinstance(data, dict) and data.get("type") == "message"


def answer_json(api: str, body: bytes, streamed: bool) -> dict[str, Any]:
    """The answer of `api` (`chat`, `responses` or `messages`) in `body` as one JSON
    object (see the module's docstring); `Unreadable` if a stream carried no Responses
    answer or no Messages API message, or a whole answer is not a JSON object (for
    `messages`: not a message)."""
    if not streamed:
        data = json_object(body, "the answer", Unreadable)
        if api == "messages" and data.get("type") != "message" and "content" not in data:
            raise Unreadable(f"the answer is not a message: {orjson.dumps(data)[:200]!r}")
        return data
    chunks = sse_data(body)
    if api == "chat":
        return _chat_from_chunks(chunks)
    if api == "messages":
        failed = next((c for c in chunks if c.get("type") == "error"), None)
        if failed is not None:  # the provider gave up mid-stream: no answer, a failure
            said = failed.get("error")
            error: dict[str, Any] = said if isinstance(said, dict) else {}
            raise Unreadable(
                f"the stream ended in an error: {error.get('type')}: {error.get('message')}"
            )
        found = message_from_events(chunks)
        if found is None:
            raise Unreadable("the stream carried no message_start")
        return found
    done = [c for c in chunks if c.get("type") in ("response.completed", "response.done")]
    if done and isinstance(done[-1].get("response"), dict):
        return _with_items(done[-1]["response"], chunks)
    incomplete = [c for c in chunks if isinstance(c.get("response"), dict)]
    if not incomplete:
        raise Unreadable("the stream carried no response")
    return _with_items(incomplete[-1]["response"], chunks)


def sse_data(body: bytes) -> list[dict[str, Any]]:
    """The JSON objects of a server-sent event stream's `data:` lines (`[DONE]` left out)."""
    found = []
    for line in body.splitlines():
        if not line.startswith(b"data:"):
            continue
        data = line[5:].strip()
        if not data or data == b"[DONE]":
            continue
        try:
            value = orjson.loads(data)
        except orjson.JSONDecodeError:
            continue
        if isinstance(value, dict):
            found.append(value)
    return found


def _with_items(response: dict[str, Any], chunks: list[dict[str, Any]]) -> dict[str, Any]:
    """`response`, its `output` taken from the stream's `response.output_item.done` events
    when it holds none (what a client such as Codex CLI acts on; a server may leave the
    final event's `output` empty)."""
    if response.get("output"):
        return response
    items = [
        c["item"]
        for c in chunks
        if c.get("type") == "response.output_item.done" and isinstance(c.get("item"), dict)
    ]
    return response | {"output": items} if items else response


def _chat_from_chunks(chunks: list[dict[str, Any]]) -> dict[str, Any]:
    """The chat completion a stream of chunks adds up to."""
    text: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    finish = None
    usage = None
    model = None
    for chunk in chunks:
        model = chunk.get("model") or model
        usage = chunk.get("usage") or usage
        for choice in chunk.get("choices") or []:
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            finish = choice.get("finish_reason") or finish
            delta = choice.get("delta") or {}
            if isinstance(delta.get("content"), str):
                text.append(delta["content"])
            for part in delta.get("tool_calls") or []:
                call = calls.setdefault(
                    part.get("index", 0), {"id": "", "function": {"name": "", "arguments": ""}}
                )
                call["id"] = part.get("id") or call["id"]
                function = part.get("function") or {}
                call["function"]["name"] += function.get("name") or ""
                call["function"]["arguments"] += function.get("arguments") or ""
    message: dict[str, Any] = {"role": "assistant", "content": "".join(text)}
    if calls:
        message["tool_calls"] = [{"type": "function", **calls[index]} for index in sorted(calls)]
    choice = {"index": 0, "message": message, "finish_reason": finish}
    return {"model": model, "choices": [choice], "usage": usage}
