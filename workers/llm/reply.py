"""A model's answer, parsed: its text, its tool calls, and what is wrong with them.

A tool call's arguments are read as models write JSON (`model_json`: a trailing comma
or a comment is left out). A call whose arguments are still not a JSON object, or that
names a tool the request did not declare, is kept with a `problem` instead of raising:
the caller tells the model (`ToolCall.problem_message()`) and the run goes on.
"""

import json
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from events.payloads.model import Usage
from workers.llm import model_json

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletion

log = logging.getLogger(__name__)


class MalformedResponse(ValueError):
    """A 200 answer that is not a chat completion (a proxy's page, a cut-off body)."""


@dataclass(frozen=True)
class ToolCall:
    """One tool call the model asked for."""

    id: str
    name: str
    raw_arguments: str
    """The arguments exactly as the model wrote them."""
    arguments: dict[str, Any] | None
    """The parsed arguments; None when they are not a JSON object."""
    problem: str | None = None
    """Why the call cannot run (bad JSON, unknown tool), in words the model can act on."""
    server_id: str | None = None
    """The id the model's server gave the call, where the log records it under another
    (`id`: `workers.lab.policies.llm.history.logged_call_id`)."""

    @property
    def answer_id(self) -> str:
        """The id a `tool` message answering the call carries: the server's own."""
        return self.id if self.server_id is None else self.server_id

    def problem_message(self) -> dict[str, Any]:
        """The `tool` message that tells the model what was wrong with this call."""
        return {"role": "tool", "tool_call_id": self.answer_id, "content": f"error: {self.problem}"}


@dataclass(frozen=True)
class Reply:
    """The first choice of a chat completion."""

    text: str | None
    tool_calls: tuple[ToolCall, ...]
    finish_reason: str | None
    message: dict[str, Any]
    """The assistant message to append to the conversation, as the model sent it."""

    def preview(self, limit: int = 4000) -> str:
        """The text, or the tool calls written out, cut at `limit` characters."""
        if self.text:
            return self.text[:limit]
        return "; ".join(f"{c.name}({c.raw_arguments})" for c in self.tool_calls)[:limit]


def read_completion(
    completion: object, body: bytes, tool_names: frozenset[str]
) -> tuple[Reply, Usage | None]:
    """The reply and usage in what the SDK parsed from `body`; `MalformedResponse` if none.

    The SDK builds its models without validating them, so a missing field shows only
    when it is read: reading happens here, once, and any gap is a malformed answer.
    """
    from openai.types.chat import ChatCompletion  # as `chat_completion` imports it

    if not isinstance(completion, ChatCompletion) or "choices" not in completion.model_fields_set:
        raise MalformedResponse(f"not a chat completion: {body[:300].decode(errors='replace')}")
    try:
        reply = parse_reply(completion, tool_names)
    except (AttributeError, TypeError, ValidationError) as exc:
        raise MalformedResponse(f"malformed chat completion ({exc}): {body[:300]!r}") from None
    try:
        return reply, usage_of(completion)
    except (AttributeError, TypeError, ValidationError) as exc:
        # The answer is good and may have been billed: keep it, with its usage unknown.
        log.warning("unreadable usage (%s), recorded as missing", type(exc).__name__)
        return reply, None


def chat_completion(data: dict[str, Any]) -> "ChatCompletion":
    """`data` as the SDK parses a chat completion (its `model_construct`: nested objects
    built, no validation, fields kept). The SDK is imported here, at its first use: a
    command that calls no model starts without it (0.4 s)."""
    from openai.types.chat import ChatCompletion

    return ChatCompletion.model_construct(**data)


def parse_reply(completion: "ChatCompletion", tool_names: frozenset[str]) -> Reply:
    """The reply in `completion`, with each tool call checked against `tool_names`."""
    if not completion.choices:
        return Reply(None, (), None, {"role": "assistant", "content": None})
    choice = completion.choices[0]
    calls = tuple(
        _tool_call(call.id, call.function.name, call.function.arguments or "", tool_names)
        for call in choice.message.tool_calls or ()
        if call.type == "function"
    )
    message: dict[str, Any] = {"role": "assistant", "content": choice.message.content}
    if calls:
        message["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.raw_arguments},
            }
            for call in calls
        ]
    return Reply(choice.message.content, calls, choice.finish_reason, message)


def usage_of(completion: "ChatCompletion") -> Usage | None:
    """Tokens exactly as the provider reported them; None when it reported no usage."""
    usage = completion.usage
    if usage is None:
        return None
    cached = usage.prompt_tokens_details and usage.prompt_tokens_details.cached_tokens
    reasoning = usage.completion_tokens_details and usage.completion_tokens_details.reasoning_tokens
    return Usage(
        input_tokens=usage.prompt_tokens,
        cached_input_tokens=cached or 0,
        output_tokens=usage.completion_tokens,
        reasoning_tokens=reasoning or 0,
    )


def _tool_call(call_id: str, name: str, raw: str, tool_names: frozenset[str]) -> ToolCall:
    if name not in tool_names:
        known = ", ".join(sorted(tool_names)) or "none"
        return ToolCall(call_id, name, raw, None, f"unknown tool {name!r}; the tools are {known}")
    try:
        arguments = model_json.loads(raw) if raw.strip() else {}
    except json.JSONDecodeError as exc:
        return ToolCall(call_id, name, raw, None, f"arguments for {name} are not valid JSON: {exc}")
    if not isinstance(arguments, dict):
        return ToolCall(call_id, name, raw, None, f"arguments for {name} must be a JSON object")
    return ToolCall(call_id, name, raw, arguments)
