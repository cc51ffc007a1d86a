"""Behaviour of a run from its log: action density, tool mix by phase and by third of
the run, time between actions, reasoning tokens, where time and money went, and the
useful window (when the best score stopped improving). docs/analysis.md defines each.

`behaviour(events)` is one pass over a run's events; `analysis.streaming` runs it over a
whole log (or a campaign) at once, holding only the runs still open.
"""

from collections.abc import Iterable

from analysis.figures import Behaviour
from analysis.tally import BehaviourTally, Record
from events import Event
from events.recorded import Recorded

__all__ = ["Behaviour", "as_record", "behaviour"]


def behaviour(events: Iterable[Event | Record]) -> Behaviour:
    """The behaviour figures of the run whose stream is `events` (version order), typed
    events or stored records alike."""
    tally: BehaviourTally | None = None
    for event in events:
        record = as_record(event)
        if tally is None:
            tally = BehaviourTally(record.stream)
        tally.add(record)
    if tally is None:
        raise ValueError("an empty stream has no behaviour")
    return tally.result()


def as_record(event: Event | Record) -> Record:
    """A typed event as the read side stores it (its payload as JSON values); a record
    as it is."""
    if not isinstance(event, Event):
        return event
    return Recorded(
        position=event.position or 0,
        id=event.id,
        stream=event.stream,
        version=event.version,
        type=event.type,
        schema_version=event.schema_version,
        occurred_at=event.occurred_at,
        recorded_at=event.recorded_at or event.occurred_at,
        causation_id=event.causation_id,
        correlation_id=event.correlation_id,
        actor=event.actor,
        payload=event.payload.model_dump(mode="json"),
    )
