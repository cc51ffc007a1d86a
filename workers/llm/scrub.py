"""Removing secrets from anything the gateway writes: events, blobs, log lines, errors.

A provider may echo the key it was sent (a 401 body, a proxy's error page), and an
SDK's exception message carries the body; so every string that leaves the gateway is
scrubbed, not only the ones we expect to hold a key.
"""

import re

REDACTED = "[redacted]"

MIN_SECRET = 8
"""Shorter keys are placeholders for servers that check none (`ollama`, `none`): replacing
them everywhere would mangle ordinary text and protect nothing."""

_KEY_SHAPES = re.compile(r"\bsk-[A-Za-z0-9_\-]{8,}")
"""OpenAI-style keys, whoever's they are."""


def scrub(text: str, secrets: tuple[str, ...]) -> str:
    """`text` with every secret, and anything shaped like a key, replaced by `[redacted]`."""
    for secret in secrets:
        if len(secret) >= MIN_SECRET:
            text = text.replace(secret, REDACTED)
    return _KEY_SHAPES.sub(REDACTED, text)


def scrub_bytes(data: bytes, secrets: tuple[str, ...]) -> bytes:
    """`scrub` for a body that may not be valid UTF-8 (other bytes are kept as they are)."""
    text = data.decode(errors="surrogateescape")
    return scrub(text, secrets).encode(errors="surrogateescape")
