"""Reading what an agent's model answered, as it came back through the relay: a chat
completion, a Responses API answer or an Anthropic Messages API answer, whole or streamed
(server-sent events), each read as one JSON object by `runstate.answers.answer_json`
(which the exports read answers with).

Usage is what the provider reported, read by the one reader of chat completions
(`workers.llm.reply.usage_of`) or its Responses and Messages API counterparts here; a
stream that carried no usage (a chat completion streamed without
`stream_options.include_usage`) has none, and its cost stays unknown.
"""

from dataclasses import dataclass, field
from typing import Any

import orjson

from events.payloads.model import Usage
from runstate.answers import Unreadable, answer_json
from workers.llm.reply import chat_completion, usage_of


@dataclass(frozen=True)
class AnswerCall:
    """A tool call the answer asked for."""

    id: str
    name: str
    arguments: str
    """As the model wrote them."""


@dataclass(frozen=True)
class Answer:
    """What labrxiv records of one answer."""

    model: str | None
    usage: Usage | None
    finish_reason: str | None = None
    text: str = ""
    calls: tuple[AnswerCall, ...] = field(default_factory=tuple)


def read_answer(api: str, body: bytes, streamed: bool) -> Answer:
    """The answer of `api` (`chat`, `responses` or `messages`) in `body`; `Unreadable` if
    it is none (chat and Responses answers as one JSON object: `runstate.answers`)."""
    if api == "messages":
        return messages_answer(body, streamed)
    data = answer_json(api, body, streamed)
    return _chat(data) if api == "chat" else _response(data)


def _chat(data: dict[str, Any]) -> Answer:
    if "choices" not in data:
        raise Unreadable(f"the answer has no choices: {orjson.dumps(data)[:200]!r}")
    try:
        usage = usage_of(chat_completion(data))
    except (AttributeError, TypeError, ValueError):
        usage = None
    if usage is None:  # the SDK's objects were not built: read the JSON itself
        usage = _json_usage(data.get("usage"), "prompt", "completion")
    choices = data.get("choices") or []
    first = choices[0] if choices and isinstance(choices[0], dict) else {}
    message = first.get("message") or {}
    calls = tuple(
        AnswerCall(
            str(call.get("id", "")),
            str((call.get("function") or {}).get("name", "")),
            str((call.get("function") or {}).get("arguments", "")),
        )
        for call in message.get("tool_calls") or []
        if isinstance(call, dict)
    )
    content = message.get("content")
    return Answer(
        model=data.get("model"),
        usage=usage,
        finish_reason=first.get("finish_reason"),
        text=content if isinstance(content, str) else "",
        calls=calls,
    )


def _response(data: dict[str, Any]) -> Answer:
    """A Responses API answer: `output` items (messages, function calls) and `usage`. A
    call of a tool inside a `namespace` tool (Codex CLI's MCP servers: `mcp__lab`) is named
    `namespace.name`."""
    if "output" not in data and "usage" not in data:
        raise Unreadable(f"the answer has no output: {orjson.dumps(data)[:200]!r}")
    text: list[str] = []
    calls = []
    for item in data.get("output") or []:
        if not isinstance(item, dict):
            continue
        if item.get("type") == "message":
            for part in item.get("content") or []:
                if isinstance(part, dict) and isinstance(part.get("text"), str):
                    text.append(part["text"])
        elif item.get("type") == "function_call":
            name = str(item.get("name", ""))
            if isinstance(item.get("namespace"), str):  # a tool of a `namespace` tool
                name = f"{item['namespace']}.{name}"
            calls.append(
                AnswerCall(
                    str(item.get("call_id") or item.get("id") or ""),
                    name,
                    str(item.get("arguments", "")),
                )
            )
    return Answer(
        model=data.get("model"),
        usage=responses_usage(data.get("usage")),
        finish_reason=data.get("status"),
        text="".join(text),
        calls=tuple(calls),
    )


def responses_usage(usage: object) -> Usage | None:
    """A Responses API `usage` (`input_tokens`, `output_tokens` and their details) as
    labrxiv counts tokens; None when there is none."""
    return _json_usage(usage, "input", "output")


def _json_usage(usage: object, given: str, made: str) -> Usage | None:
    """An answer's `usage` read from its JSON: `<given>_tokens`, `<made>_tokens` and their
    details (a chat completion's `prompt` and `completion`, a Responses API answer's
    `input` and `output`); None when there is none."""
    if not isinstance(usage, dict):
        return None
    try:
        cached = _detail(usage, f"{given}_tokens_details", "cached_tokens")
        reasoning = _detail(usage, f"{made}_tokens_details", "reasoning_tokens")
        return Usage(
            input_tokens=usage[f"{given}_tokens"],
            cached_input_tokens=cached,
            output_tokens=usage[f"{made}_tokens"],
            reasoning_tokens=reasoning,
        )
    except (KeyError, TypeError, ValueError):
        return None


def _detail(usage: dict[str, Any], details: str, name: str) -> Any:
    """One count of a usage's details object (0 when the object or the count is absent,
    or the object is not an object: a provider's answer is not trusted to be well formed)."""
    found = usage.get(details)
    return (found.get(name) or 0) if isinstance(found, dict) else 0


def messages_answer(body: bytes, streamed: bool) -> Answer:
    """An Anthropic Messages API answer (read as one message by `runstate.answers`): its
    `content` blocks (text, `tool_use`: its arguments the JSON of its `input`, or the
    text a stream wrote when that is not a JSON object) and `usage`."""
    data = answer_json("messages", body, streamed)
    blocks = [b for b in data.get("content") or [] if isinstance(b, dict)]
    return Answer(
        model=data.get("model"),
        usage=messages_usage(data.get("usage")),
        finish_reason=data.get("stop_reason"),
        text="".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text"),
        calls=tuple(
            AnswerCall(str(b.get("id", "")), str(b.get("name", "")), _arguments(b.get("input")))
            for b in blocks
            if b.get("type") == "tool_use"
        ),
    )


def _arguments(given: object) -> str:
    return given if isinstance(given, str) else orjson.dumps(given or {}).decode()


def messages_usage(usage: object) -> Usage | None:
    """A Messages API `usage` as labrxiv counts tokens; None when there is none.

    Anthropic's `input_tokens` leaves out the prompt's cached part: labrxiv's input is
    `input_tokens + cache_read_input_tokens + cache_creation_input_tokens`, of which
    `cache_read_input_tokens` are cached (priced at the cached-input price) and
    `cache_creation_input_tokens` written to the cache (priced as input)."""
    if not isinstance(usage, dict):
        return None
    try:
        read = int(usage.get("cache_read_input_tokens") or 0)
        written = int(usage.get("cache_creation_input_tokens") or 0)
        return Usage(
            input_tokens=int(usage["input_tokens"]) + read + written,
            cached_input_tokens=read,
            cache_creation_input_tokens=written,
            output_tokens=int(usage["output_tokens"]),
        )
    except (KeyError, TypeError, ValueError):
        return None
