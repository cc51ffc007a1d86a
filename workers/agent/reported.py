"""An agent's own tool calls, as its model traffic shows them (`AgentConfig.reports`).

`functions`: the tool calls of an answer (`tool_use` blocks of a Messages API answer),
and in a later request the `tool` messages (Chat Completions), `function_call_output`
items (Responses API) or `tool_result` blocks of user messages (Messages API) that answer
them.
`bash_blocks` (mini-swe-agent): the one ```bash block of an answer, and the user message
that follows it in the next request (the command's output). `none`: nothing.
Recorded as `tool.invoked` / `tool.returned` marked `reported`: labrxiv did not run them.
"""

import json
import re
import time
from dataclasses import dataclass
from typing import Any

import orjson

from events.payloads import ToolInvoked
from events.payloads.agent import Reports
from workers.agent.answers import Answer

BASH_BLOCK = re.compile(r"```(?:bash|sh)\s*\n(.*?)\n?```", re.DOTALL)


@dataclass(frozen=True)
class Pending:
    """A reported call waiting for its result."""

    call_id: str
    """As logged: unique in the run."""
    answer_id: str
    """How the agent's next request names it (its server's id; '' for a bash block)."""
    tool: str
    asked_at: float


@dataclass(frozen=True)
class Result:
    """A reported call's result, found in a request."""

    pending: Pending
    output: str


def invoked(
    reports: Reports, answer: Answer, request_id: str, now: float | None = None
) -> tuple[list[ToolInvoked], list[Pending]]:
    """The `tool.invoked` of each call `answer` reports, and what to wait for."""
    now = time.monotonic() if now is None else now
    events: list[ToolInvoked] = []
    pending: list[Pending] = []
    if reports == "functions":
        for index, call in enumerate(answer.calls):
            call_id = f"{call.id or index}@{request_id}"
            events.append(
                ToolInvoked(
                    call_id=call_id,
                    tool=call.name or "?",
                    args=_args(call.arguments),
                    reported=True,
                )
            )
            pending.append(Pending(call_id, call.id, call.name or "?", now))
    elif reports == "bash_blocks":
        blocks = BASH_BLOCK.findall(answer.text)
        if len(blocks) == 1:
            call_id = f"bash@{request_id}"
            events.append(
                ToolInvoked(
                    call_id=call_id, tool="bash", args={"command": blocks[0]}, reported=True
                )
            )
            pending.append(Pending(call_id, "", "bash", now))
    return events, pending


def results(api: str, body: bytes, pending: list[Pending]) -> list[Result]:
    """The results of `pending` calls that the request `body` (of `api`) carries, in the
    order they were asked; of messages answering the same id (a server that reuses its
    ids from one answer to the next), the latest."""
    if not pending:
        return []
    try:
        parsed = orjson.loads(body)
    except orjson.JSONDecodeError:
        return []
    items = parsed.get("input") if api == "responses" else parsed.get("messages")
    if not isinstance(items, list):
        return []
    by_id = {p.answer_id: p for p in pending if p.answer_id}
    found: list[Result] = []
    for item in reversed(items):  # the latest first: servers reuse their ids
        for answered, output in _answers(item):
            if answered in by_id:
                found.append(Result(by_id.pop(answered), _text(output)))
    found.sort(key=lambda result: pending.index(result.pending))
    blocks = [p for p in pending if not p.answer_id]
    users = [i for i in items if isinstance(i, dict) and i.get("role") == "user"]
    if blocks and users:
        found.append(Result(blocks[0], _text(users[-1].get("content"))))
    return found


def _answers(item: object) -> list[tuple[str, object]]:
    """The (call id, output) pairs a request's message or item carries: a `tool` message,
    a `function_call_output` item, or a user message's `tool_result` blocks."""
    if not isinstance(item, dict):
        return []
    if item.get("role") == "tool" and isinstance(item.get("tool_call_id"), str):
        return [(item["tool_call_id"], item.get("content"))]
    if item.get("type") == "function_call_output" and isinstance(item.get("call_id"), str):
        return [(item["call_id"], item.get("output"))]
    content = item.get("content")
    if item.get("role") != "user" or not isinstance(content, list):
        return []
    return [
        (block["tool_use_id"], block.get("content"))
        for block in reversed(content)
        if isinstance(block, dict)
        and block.get("type") == "tool_result"
        and isinstance(block.get("tool_use_id"), str)
    ]


def _args(raw: str) -> dict[str, Any]:
    try:
        value = json.loads(raw) if raw else {}
    except ValueError:
        return {"raw": raw}
    return value if isinstance(value, dict) else {"raw": raw}


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return "" if content is None else str(content)
