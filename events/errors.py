"""Errors of the write side; one shallow hierarchy, a line each."""


class EventError(Exception):
    """Base of every error raised by the events package."""


class ConflictError(EventError):
    """An append names a stream version that is taken or not next: the producer was stale."""


class StreamEnded(ConflictError):
    """An append continues a stream whose last event ends it (`events.streams.ENDS`)."""


class UnknownSchemaVersion(EventError):
    """A stored event was written by a newer labrxiv than the one reading it."""


class UpgradeFailed(EventError):
    """An old payload does not have the shape its upgrade to today's version expects."""


class BlobMismatch(EventError):
    """A blob's content does not hash to the name it was sent under."""
