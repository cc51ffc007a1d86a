"""The write side of labrxiv: the event envelope, typed payloads and the event store.

This package imports nothing else of the project.
"""

from events.envelope import Event
from events.errors import ConflictError, EventError
from events.store import AppendResult, Diverged, EventStore

__all__ = ["AppendResult", "ConflictError", "Diverged", "Event", "EventError", "EventStore"]
