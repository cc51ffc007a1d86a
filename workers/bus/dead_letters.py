"""Dead letters on the way to the table: how much of a rejected message is kept, and
how a worker process without the store sends one to the recorder.

Where a dead letter is written depends on who finds it:
- the recorder (a bad batch, a bad event) and a task whose arguments do not fit its
  handler write it through the worker's own store (every worker process has one);
- the Redis channel and the Celery consumer run in a worker's main process, which
  holds no database connection (pool processes are forked from it, and a connection
  must not be shared across a fork). They send it as a `labrxiv.dead_letter` task to
  the `events` queue, and acknowledge the bad message only once that is sent; the
  recorder writes it. A dead letter so travels at least once, like any message: a
  worker killed between the write and the acknowledgement leaves it twice in the table.
"""

import base64
import binascii

DEAD_LETTER_TASK = "labrxiv.dead_letter"
"""The recorder's task that writes a dead letter found outside it; its queue is `events`."""

RAW_LIMIT = 64 * 1024
"""How much of a rejected message is kept (bytes, or characters of text)."""


def cut(raw: bytes) -> tuple[bytes, str]:
    """`raw` cut to `RAW_LIMIT`, and a note of its size for the reason."""
    if len(raw) <= RAW_LIMIT:
        return raw, f"{len(raw)} bytes"
    return raw[:RAW_LIMIT], f"{len(raw)} bytes, the first {RAW_LIMIT} kept"


def visible(raw: bytes) -> str:
    """Bytes as text a person can read and every database can store: UTF-8 where they
    are, `\\xff` for a byte that is not (a table of text columns cannot hold bytes)."""
    return raw.decode("utf-8", "backslashreplace")


def for_transit(raw: bytes) -> str:
    """Bytes cut to the limit and base64-encoded: a task argument must be JSON text."""
    return base64.b64encode(raw[:RAW_LIMIT]).decode()


def from_transit(text: str) -> bytes | None:
    """The bytes `for_transit` encoded, or None if `text` is not its output."""
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return None
