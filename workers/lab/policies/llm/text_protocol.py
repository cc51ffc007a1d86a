"""Tools for models without function calling: described in the prompt, called in the text.

The model answers with exactly one block `<tool>{"name": ..., "arguments": {...}}</tool>`;
the result comes back as a user message. Documented in docs/models.md.
"""

import json
import re
from typing import Any

from workers.llm import model_json
from workers.llm.reply import ToolCall

_BLOCK = re.compile(r"<tool>(.*?)</tool>", re.DOTALL)


def describe(schemas: list[dict[str, Any]]) -> str:
    """The system-prompt section that lists the tools and the calling convention."""
    lines = [
        "You have these tools. To call one, answer with exactly one block",
        '<tool>{"name": "TOOL", "arguments": {...}}</tool>',
        "and nothing after it. The result comes back in the next message.",
        "",
    ]
    for schema in schemas:
        function = schema["function"]
        lines.append(
            f"- {function['name']}: {function['description'].splitlines()[0]} "
            f"arguments schema: {json.dumps(function['parameters'].get('properties', {}))}"
        )
    return "\n".join(lines)


def parse(text: str | None, call_prefix: str, tool_names: frozenset[str]) -> tuple[ToolCall, ...]:
    """The tool call in a text answer (at most one), with a problem when it is malformed."""
    match = _BLOCK.search(text or "")
    if match is None:
        return ()
    call_id = f"{call_prefix}-t1"
    raw = match.group(1).strip()
    try:
        body = model_json.loads(raw)
    except ValueError as exc:
        return (ToolCall(call_id, "?", raw, None, f"the tool block is not JSON: {exc}"),)
    if not isinstance(body, dict) or not isinstance(body.get("name"), str):
        return (ToolCall(call_id, "?", raw, None, 'the tool block needs {"name", "arguments"}'),)
    name, arguments = body["name"], body.get("arguments", {})
    if name not in tool_names:
        problem = f"unknown tool {name!r}; the tools are {', '.join(sorted(tool_names))}"
        return (ToolCall(call_id, name, raw, None, problem),)
    if not isinstance(arguments, dict):
        return (ToolCall(call_id, name, raw, None, "arguments must be a JSON object"),)
    return (ToolCall(call_id, name, json.dumps(arguments), arguments),)
