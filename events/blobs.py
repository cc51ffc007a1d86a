"""Content-addressed blobs: large text kept out of event payloads, referenced by hash."""

import hashlib

from pydantic import BaseModel, ConfigDict, Field


class BlobRef(BaseModel):
    """A pointer from an event to a blob, with the size and hash to check it by."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    """Hex digest of the content; the blob's key."""
    size: int = Field(ge=0)
    """Length of the content in bytes."""


def digest(data: bytes) -> str:
    """The key a blob is stored under."""
    return hashlib.sha256(data).hexdigest()


def blob_ref(data: bytes) -> BlobRef:
    """The reference to put in a payload for `data`."""
    return BlobRef(sha256=digest(data), size=len(data))
