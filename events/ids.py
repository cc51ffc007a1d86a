"""Event ids: time-ordered UUIDs (version 7), random or derived from a seed.

A lab step that is delivered twice must produce the same event ids so the log keeps
one copy; `derived_id` gives such ids, still ordered by the time they name.
"""

import hashlib
import uuid
from datetime import UTC, datetime

import uuid6


def new_id() -> uuid.UUID:
    """A fresh random time-ordered id."""
    return uuid.UUID(bytes=uuid6.uuid7().bytes)


def derived_id(seed: str, at: datetime) -> uuid.UUID:
    """A UUIDv7 whose time part is `at` and whose random part is a hash of `seed`."""
    millis = int(at.timestamp() * 1000) & ((1 << 48) - 1)
    rand = int.from_bytes(hashlib.sha256(seed.encode()).digest()[:10], "big")
    rand_a = (rand >> 62) & 0xFFF
    rand_b = rand & ((1 << 62) - 1)
    value = (millis << 80) | (0x7 << 76) | (rand_a << 64) | (0b10 << 62) | rand_b
    return uuid.UUID(int=value)


def utcnow() -> datetime:
    """Now, timezone-aware in UTC: every timestamp in the log is."""
    return datetime.now(UTC)
