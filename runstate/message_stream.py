"""An Anthropic Messages API stream's events (server-sent events, as JSON objects) as the
one message they add up to: `message_start`'s message, each `content_block_start` block
with its `content_block_delta`s (text, thinking, a tool's input JSON) added, and
`message_delta`'s stop reason and usage (its counts are cumulative: they replace
`message_start`'s).

A `tool_use` block's `input` is the JSON its `input_json_delta`s wrote, read as an
object; when what they wrote is not a JSON object, `input` is that text as written.
"""

from typing import Any

import orjson

TEXT_DELTAS = {"text_delta": "text", "thinking_delta": "thinking", "signature_delta": "signature"}
"""The delta types that add to a block's text, and the block key each adds to."""


def message_from_events(events: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The message `events` add up to; None when they hold no `message_start`."""
    start = next((e for e in events if e.get("type") == "message_start"), None)
    if start is None or not isinstance(start.get("message"), dict):
        return None
    message = dict(start["message"])
    usage = dict(message.get("usage") or {})
    blocks: dict[int, dict[str, Any]] = {}
    written: dict[int, list[str]] = {}
    for event in events:
        kind = event.get("type")
        index = event.get("index")
        if kind == "message_delta":
            said = event.get("delta") or {}
            for key in ("stop_reason", "stop_sequence"):
                if said.get(key) is not None:
                    message[key] = said[key]
            more = event.get("usage")
            if isinstance(more, dict):
                usage |= {k: v for k, v in more.items() if v is not None}
        elif not isinstance(index, int):
            continue
        elif kind == "content_block_start" and isinstance(event.get("content_block"), dict):
            blocks[index] = dict(event["content_block"])
            written[index] = []
        elif kind == "content_block_delta" and index in blocks:
            delta = event.get("delta") or {}
            added = TEXT_DELTAS.get(str(delta.get("type")))
            if added is not None:
                text = str(blocks[index].get(added, "")) + str(delta.get(added, ""))
                blocks[index][added] = text
            elif delta.get("type") == "input_json_delta":
                written[index].append(str(delta.get("partial_json", "")))
    for index, parts in written.items():
        if parts:
            blocks[index]["input"] = _object_or_text("".join(parts))
    message["content"] = [blocks[index] for index in sorted(blocks)]
    message["usage"] = usage or None
    return message


def _object_or_text(text: str) -> dict[str, Any] | str:
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return text
    return value if isinstance(value, dict) else text
