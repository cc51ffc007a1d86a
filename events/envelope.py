"""The event envelope: what every event in the log carries besides its payload."""

import uuid
from datetime import UTC, datetime
from typing import Any

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from events.payloads import AnyPayload, Payload
from events.streams import STREAM_PATTERN


def _current_version(data: dict[str, Any]) -> int:
    payload = data.get("payload")
    return payload.SCHEMA_VERSION if isinstance(payload, Payload) else 1


class Event(BaseModel):
    """One fact in the log. Immutable; appended once; never edited."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: uuid.UUID
    """Time-ordered UUID chosen by the producer; appending the same id twice is a no-op."""
    stream: str = Field(pattern=STREAM_PATTERN)
    """The aggregate the event belongs to, `kind-<id>`: `run-…`, `campaign-…`."""
    version: int = Field(ge=0)
    """0, 1, 2… within the stream; `(stream, version)` is unique in the log."""
    occurred_at: AwareDatetime
    """When the producer says it happened (UTC)."""
    recorded_at: AwareDatetime | None = None
    """When the store appended it; set by the store, `None` before."""
    position: int | None = None
    """Global order assigned by the store; `None` before it is appended."""
    causation_id: uuid.UUID | None = None
    """The event that caused this one (a step's trigger), if any."""
    correlation_id: str | None = None
    """The campaign the event belongs to, if any."""
    actor: str | None = None
    """The lab (or component) that produced it."""
    payload: AnyPayload
    """The typed body; its `type` names the event."""
    schema_version: int = Field(default_factory=_current_version, ge=1)
    """The payload shape's version; older shapes are upgraded when read (events.upgrade)."""

    @property
    def type(self) -> str:
        """The event type, e.g. `run.started`."""
        return self.payload.type


def as_utc(moment: datetime) -> datetime:
    """Naive datetimes read back from SQLite are UTC; make them aware."""
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
