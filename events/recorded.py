"""The read side's view of a stored event: light, with the payload as a plain dict.

Events are validated in full at the door (the recorder); what comes back out of the
store is trusted, upgraded to today's payload shape, and not validated again, so a
projector can replay millions of events quickly. `typed()` gives the pydantic
`Event` when a reader wants it.
"""

import uuid
from datetime import datetime
from typing import Any, Generic, NamedTuple, Protocol, TypeAlias, TypeVar

from events.envelope import Event
from events.payloads import BY_TYPE, Payload

P = TypeVar("P")
P_co = TypeVar("P_co", covariant=True)


class Stored(NamedTuple, Generic[P]):
    """A stored event's columns, in the store's order, its payload a `P`: `Recorded` (a
    plain dict) and `TypedRecord` (its type's model) are the two.

    A named tuple, not a frozen dataclass: a rebuild makes one per stored event, and a
    frozen dataclass took 2.3 µs to build against 0.4 µs (bench/rebuild.py).
    """

    position: int
    id: uuid.UUID
    stream: str
    version: int
    type: str
    schema_version: int
    occurred_at: datetime
    recorded_at: datetime
    causation_id: uuid.UUID | None
    correlation_id: str | None
    actor: str | None
    payload: P


class Recorded(Stored[dict[str, Any]]):
    """A stored event as the read side sees it, its payload as stored (upgraded)."""

    __slots__ = ()

    def typed(self) -> Event:
        """The same event as an `Event` with a typed payload.

        The payload is validated into its type's model; the envelope is not validated
        again: its fields come from the store's typed columns (ids as UUIDs, aware
        datetimes: `rows_to_records`), checked when the event was recorded. Validating
        the envelope cost ~4 µs an event of the ~7 of `typed()`, most of it pydantic
        checking UUIDs it was handed as UUIDs, and `model_construct` (pydantic's way to
        skip it) ~4.5; the findings read model types every event of a rebuild
        (docs/benchmarks.md, "Rebuild"). tests/events/test_recorded.py checks the
        result equals a full validation for every payload type.
        """
        payload_type = BY_TYPE.get(self.type)
        if payload_type is None:  # not a type this labrxiv knows: validation says so
            return self.validated()
        position, id_, stream, version, _, schema, occurred, recorded, cause, campaign, actor, _ = (
            self
        )
        fields = {  # in the envelope's declaration order, as validation sets them
            "id": id_,
            "stream": stream,
            "version": version,
            "occurred_at": occurred,
            "recorded_at": recorded,
            "position": position,
            "causation_id": cause,
            "correlation_id": campaign,
            "actor": actor,
            "payload": payload_type.model_validate(self.payload),
            "schema_version": schema,
        }
        return _stored_event(fields)

    def typed_record(self) -> "TypedRecord":
        """The same event with its payload validated into its type's model, and no
        envelope built: what a fold over many stored events reads (`Fact`).

        `typed()` builds pydantic's `Event` around the payload, ~3.7 µs an event of its
        ~8 on the bench machine; the run's fold and the failure-mode detectors read an
        event's fields, never the envelope's methods, and the findings read model folds
        every event of a rebuild (docs/benchmarks.md, "Rebuild")."""
        payload_type = BY_TYPE.get(self.type)
        if payload_type is None:  # not a type this labrxiv knows: validation says so
            return TypedRecord(*self[:11], self.validated().payload)
        payload = payload_type.__pydantic_validator__.validate_python(self.payload)
        # `tuple.__new__`, not the named tuple's own `__new__` (a Python function taking
        # twelve arguments by name): a third of this method's own time.
        return _new_typed(TypedRecord, (*self[:11], payload))

    def validated(self) -> Event:
        """The same event validated in full, envelope and payload, as the recorder does."""
        return Event.model_validate(self._envelope())

    def _envelope(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "stream": self.stream,
            "version": self.version,
            "occurred_at": self.occurred_at,
            "recorded_at": self.recorded_at,
            "position": self.position,
            "causation_id": self.causation_id,
            "correlation_id": self.correlation_id,
            "actor": self.actor,
            "payload": self.payload,
            "schema_version": self.schema_version,
        }


_EVENT_FIELDS = frozenset(Event.model_fields)


def _stored_event(fields: dict[str, Any]) -> Event:
    """An `Event` of trusted fields (every one of them), set as
    pydantic's `model_construct` sets them (pydantic 2.14, pinned) without its per-field
    loop over defaults."""
    event = object.__new__(Event)
    object.__setattr__(event, "__dict__", fields)
    object.__setattr__(event, "__pydantic_fields_set__", set(_EVENT_FIELDS))
    object.__setattr__(event, "__pydantic_extra__", None)
    object.__setattr__(event, "__pydantic_private__", None)
    return event


_new_typed = tuple.__new__


class TypedRecord(Stored[Payload]):
    """A stored event with its payload typed: what `Recorded.typed_record` gives."""

    __slots__ = ()


class EventLike(Protocol[P_co]):
    """What a fold reads of an event, its payload a `P_co`: `Fact` and
    `analysis.tally.Record` are the two kinds."""

    @property
    def id(self) -> uuid.UUID: ...
    @property
    def stream(self) -> str: ...
    @property
    def version(self) -> int: ...
    @property
    def type(self) -> str: ...
    @property
    def occurred_at(self) -> datetime: ...
    @property
    def position(self) -> int | None: ...
    @property
    def causation_id(self) -> uuid.UUID | None: ...
    @property
    def correlation_id(self) -> str | None: ...
    @property
    def actor(self) -> str | None: ...
    @property
    def payload(self) -> P_co: ...


Fact: TypeAlias = EventLike[Payload]
"""An event with a typed payload: an `Event` and a `TypedRecord` both are one."""
