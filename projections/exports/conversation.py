"""A run's conversation as OpenAI chat messages, rebuilt from its log.

A run that called a model (`llm`, `agent`) has the conversation its model last saw: the
messages of its last answered request (`model.called`'s request blob), then that answer
(`model.responded`'s response blob). The tools are those its requests declared, each
name once, as the latest request declared it (an `llm` lab's phases offer different
tools; its earlier answers call tools a later phase no longer offers).

A call may be of any API an agent's relay passes on (`workers.agent.relay`): Chat
Completions, Responses or Anthropic's Messages, as `model.called` records it (or, in
older logs, as `runstate.answers.request_api` tells it from the request's shape); its
answer was streamed when the request's `stream` is true, and is read as one JSON object
by the one reader of answers (`runstate.answers.answer_json`). Each exchange is kept in
Chat Completions form (`projections.exports.chat_form`): a Responses request's
instructions and items, or a Messages request's system and content blocks, as chat
messages, its answer as one assistant message, and every tool name as a valid OpenAI
function name
(`projections.exports.function_names`: `mcp__lab.evaluate` is `mcp__lab__evaluate`).

A run that called none (`search`, an offline baseline) has the conversation its tool
calls make: a system message saying what the run is, a user message naming its task,
then for each `tool.invoked` an assistant message calling the tool and a `tool` message
with what its `tool.returned` says (its whole output when the log kept it). Its tools
are the ones it called, as `schemas` declares them, named as above.
"""

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import orjson

from events.payloads import ModelCalled, ModelResponded, RunStarted, ToolInvoked, ToolReturned
from events.recorded import Fact
from projections.exports.chat_form import chat_answer, chat_request
from projections.exports.function_names import function_name
from projections.exports.message import Message
from runstate.answers import Unreadable, answer_json, request_api

BlobReader = Callable[[str], bytes | None]
"""A blob's bytes by its hash (`EventStore.get_blob`); None when the log lost it."""


@dataclass(frozen=True)
class Exchange:
    """One answered model call: what was asked and what came back, as the log holds them."""

    called: ModelCalled
    responded: ModelResponded
    request: dict[str, Any]
    """The request in Chat Completions form (`messages`, `tools`)."""
    response: dict[str, Any]
    """The answer as a chat completion (`choices`, `usage`, `model`)."""
    api: str = "chat"
    """The API the call went to: `chat`, `responses` or `messages`."""

    @property
    def answer(self) -> Message:
        """The answer's first choice as an assistant message."""
        return assistant_message(self.response)

    @property
    def finish_reason(self) -> str | None:
        """Why the answer ended, as a chat completion says it (`stop`, `tool_calls`…)."""
        choices = self.response.get("choices") or [{}]
        reason = choices[0].get("finish_reason")
        return reason if isinstance(reason, str) else self.responded.finish_reason


@dataclass(frozen=True)
class Conversation:
    """A run's messages and the tools they may call."""

    messages: list[Message]
    tools: list[dict[str, Any]]
    """OpenAI function declarations (`{"type": "function", "function": {...}}`)."""
    source: Literal["model", "tools", "none"]
    """`model`: the last answered request and its answer; `tools`: made from the tool
    calls of a run that called no model; `none`: the run has neither."""


def exchanges(events: Sequence[Fact], read_blob: BlobReader) -> list[Exchange]:
    """The run's answered model calls in log order, those whose blobs the log kept and
    whose answer is readable, in Chat Completions form."""
    asked: dict[str, ModelCalled] = {}
    found: list[Exchange] = []
    for event in events:
        payload = event.payload
        if isinstance(payload, ModelCalled):
            asked[payload.call_id] = payload
        elif isinstance(payload, ModelResponded) and payload.call_id in asked:
            called = asked.pop(payload.call_id)
            request = _json(read_blob, called.request.sha256 if called.request else None)
            body = None if payload.response is None else read_blob(payload.response.sha256)
            if request is None or body is None:
                continue
            api, streamed = request_api(request, body, called.api)
            try:
                response = answer_json(api, body, streamed)
            except Unreadable:
                continue
            chat = chat_request(api, request)
            found.append(Exchange(called, payload, chat, chat_answer(api, response), api))
    return found


def conversation_of(
    events: Sequence[Fact],
    answered: Sequence[Exchange],
    read_blob: BlobReader,
    schemas: Mapping[str, dict[str, Any]] | None = None,
) -> Conversation:
    """The conversation of the run whose events are `events` and answered model calls
    `answered` (see the module's docstring); `schemas`: tool declarations by name, for a
    run that called no model."""
    if answered:
        last = answered[-1]
        messages = [dict(m) for m in last.request.get("messages", [])] + [last.answer]
        declared: dict[str, dict[str, Any]] = {}
        for exchange in answered:
            for tool in exchange.request.get("tools") or []:
                declared[tool.get("function", {}).get("name", "")] = tool
        return Conversation(messages, list(declared.values()), "model")
    return _from_tools(events, read_blob, schemas or {})


def assistant_message(response: Mapping[str, Any]) -> Message:
    """A chat completion's first choice as an assistant message (`content`, and
    `tool_calls` when it made any, each function named as `function_name` has it)."""
    choices = response.get("choices") or [{}]
    given = choices[0].get("message") or {}
    message: Message = {"role": "assistant", "content": given.get("content")}
    calls = [
        {
            "id": call.get("id") or f"call_{number}",
            "type": "function",
            "function": {
                "name": function_name(str(call.get("function", {}).get("name") or "")),
                "arguments": call.get("function", {}).get("arguments") or "{}",
            },
        }
        for number, call in enumerate(given.get("tool_calls") or [])
    ]
    if calls:
        message["tool_calls"] = calls
    elif message["content"] is None:
        message["content"] = ""
    return message


def tool_output(returned: ToolReturned, read_blob: BlobReader) -> str:
    """A tool call's whole output when the log kept it, else its preview."""
    if returned.output is not None:
        data = read_blob(returned.output.sha256)
        if data is not None:
            return data.decode(errors="replace")
    return returned.preview


def _from_tools(
    events: Sequence[Fact], read_blob: BlobReader, schemas: Mapping[str, dict[str, Any]]
) -> Conversation:
    started = events[0].payload if events else None
    invoked = [e.payload for e in events if isinstance(e.payload, ToolInvoked)]
    if not isinstance(started, RunStarted) or not invoked:
        return Conversation([], [], "none")
    returned = {e.payload.call_id: e.payload for e in events if isinstance(e.payload, ToolReturned)}
    messages: list[Message] = [
        {
            "role": "system",
            "content": f"A labrxiv `{started.policy}` lab (lab {started.lab}): "
            "its actions, as tool calls, on a research task.",
        },
        {"role": "user", "content": f"Work on the research task {started.task}."},
    ]
    used: dict[str, dict[str, Any]] = {}
    for call in invoked:
        arguments = orjson.dumps(call.args).decode()
        name = function_name(call.tool)
        function = {"name": name, "arguments": arguments}
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": call.call_id, "type": "function", "function": function}],
            }
        )
        result = returned.get(call.call_id)
        content = "(no result in the log)" if result is None else tool_output(result, read_blob)
        messages.append({"role": "tool", "tool_call_id": call.call_id, "content": content})
        used.setdefault(name, _named(schemas.get(call.tool) or _bare(call.tool), name))
    return Conversation(messages, list(used.values()), "tools")


def _bare(name: str) -> dict[str, Any]:
    """The declaration of a tool no schema is known for: any object of arguments."""
    parameters = {"type": "object", "properties": {}}
    return {"type": "function", "function": {"name": name, "parameters": parameters}}


def _named(tool: dict[str, Any], name: str) -> dict[str, Any]:
    """A function tool declaration named `name`."""
    return tool | {"function": (tool.get("function") or {}) | {"name": name}}


def _json(read_blob: BlobReader, sha256: str | None) -> dict[str, Any] | None:
    data = None if sha256 is None else read_blob(sha256)
    if data is None:
        return None
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None
