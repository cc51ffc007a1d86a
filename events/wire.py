"""The message a producer publishes: a batch of events and the blobs they reference.

One message carries many events (batching is what makes ingest fast: one Celery
task per event runs at ~500/s on this machine). Blobs travel base64-encoded and are
checked against their hash by the recorder.
"""

import base64
from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from events.envelope import Event


def encode_batch(events: Sequence[Event], blobs: Mapping[str, bytes] | None = None) -> str:
    """The message text for `events` and `blobs` (hash → content)."""
    body: dict[str, Any] = {"events": [e.model_dump(mode="json") for e in events]}
    if blobs:
        body["blobs"] = {k: base64.b64encode(v).decode() for k, v in blobs.items()}
    return orjson.dumps(body).decode()
