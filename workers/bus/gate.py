"""The door of a Redis queue: what kombu is handed for each item taken off a list.

kombu's Redis channel parses every item it pops as JSON and reads the result as a
message envelope. An item it cannot read raises out of the worker's event loop, and
Celery stops the worker: `LPUSH events` of a few bytes that are not JSON would leave
every later message waiting for someone to restart it. `admit` reads an item as
kombu will read it; an item kombu can deliver goes on unchanged, and any other is
replaced by a well-formed *unreadable* message: its body is the item's bytes (cut to
`RAW_LIMIT`), its content type `UNREADABLE`, and the reason is in the `REASON_HEADER`
header. The consumer dead-letters it (workers/bus/consumer.py) like any message it
cannot run. Being well-formed, it is acknowledged, or restored after a crash, as any
other message is.
"""

import base64
import binascii
import json
import uuid
from typing import Any

from kombu.utils.json import loads as kombu_loads

from workers.bus.dead_letters import cut

UNREADABLE = "application/x-labrxiv-unreadable"
"""The content type of a message that wraps an item kombu could not read."""
REASON_HEADER = "labrxiv-unreadable"
"""The header that says why the item could not be read."""


def admit(item: bytes, queue: str) -> bytes:
    """`item` if kombu can deliver it from `queue`, else an unreadable message holding it."""
    reason = problem(item)
    if reason is None:
        return item
    return unreadable(item, queue, reason)


def problem(item: bytes) -> str | None:
    """Why kombu could not deliver `item`, or None.

    Checked as kombu reads it: UTF-8 (kombu would put U+FFFD for a bad byte and go
    on, changing the message), then kombu's own JSON decoder (with its object hook,
    which rejects a malformed `{"__type__": …}` marker), then the envelope fields
    kombu's virtual channel and its Redis QoS use without checking them.
    """
    try:
        text = item.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"not UTF-8: {exc.reason} at byte {exc.start}"
    try:
        envelope = kombu_loads(text)
    except RecursionError:
        return "not JSON: nested too deeply to parse"
    except json.JSONDecodeError as exc:
        return f"not JSON: {exc}"
    except Exception as exc:  # kombu's object hook refused a `{"__type__": …}` marker
        return f"not JSON kombu can read: {exc!r}"
    return envelope_problem(envelope)


def envelope_problem(envelope: Any) -> str | None:
    """Why `envelope` (parsed JSON) is not a message kombu's Redis channel can deliver."""
    if not isinstance(envelope, dict):
        return f"not a kombu message: a JSON {type(envelope).__name__}, not an object"
    properties = envelope.get("properties")
    if not isinstance(properties, dict):
        return "not a kombu message: no 'properties' object"
    tag = properties.get("delivery_tag")
    if not isinstance(tag, str) or not tag:
        return "not a kombu message: 'properties.delivery_tag' is not a string"
    info = properties.get("delivery_info")
    if not (
        isinstance(info, dict)
        and isinstance(info.get("exchange"), str)
        and isinstance(info.get("routing_key"), str)
    ):
        return "not a kombu message: 'properties.delivery_info' has no exchange and routing_key"
    for key in ("content-type", "content-encoding"):
        if not isinstance(envelope.get(key), str | None):
            return f"not a kombu message: '{key}' is not a string"
    if not isinstance(envelope.get("headers"), dict | None):
        return "not a kombu message: 'headers' is not an object"
    return _body_problem(envelope.get("body"), properties.get("body_encoding"))


def _body_problem(body: Any, encoding: Any) -> str | None:
    if encoding is not None and not isinstance(encoding, str):
        return "not a kombu message: 'properties.body_encoding' is not a string"
    if not body:
        return None  # kombu delivers an empty body as it is
    if not isinstance(body, str):
        return "not a kombu message: 'body' is not a string"
    if encoding is None or encoding.lower() == "utf-8":
        return None
    if encoding != "base64":  # the only codec kombu's channels have
        return f"not a kombu message: unknown body encoding {encoding!r}"
    try:
        base64.b64decode(body.encode())  # as kombu decodes it (not validating)
    except (binascii.Error, ValueError) as exc:
        return f"not a kombu message: the body is not base64: {exc}"
    return None


def unreadable(item: bytes, queue: str, reason: str) -> bytes:
    """A well-formed kombu message on `queue` that carries `item` and why it was refused."""
    kept, size = cut(item)
    envelope = {
        "body": base64.b64encode(kept).decode(),
        "content-type": UNREADABLE,
        "content-encoding": "binary",
        "headers": {REASON_HEADER: f"{reason} ({size})"},
        "properties": {
            "delivery_tag": str(uuid.uuid4()),
            "body_encoding": "base64",
            "delivery_info": {"exchange": "", "routing_key": queue},
            "priority": 0,
        },
    }
    return json.dumps(envelope).encode()


def is_unreadable(envelope: dict[str, Any]) -> bool:
    """Whether a parsed envelope is one `unreadable` made."""
    return envelope.get("content-type") == UNREADABLE
