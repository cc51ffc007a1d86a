"""Trace and span ids derived from the log, so a run exported twice has the same ids.

A run is one trace: its trace id is a hash of its stream. A span's id is a hash of what
it stands for: the run's stream for the run's span, the event that opened a call
(`model.called`, `tool.invoked`) for a call's. A backend that keys spans by id (Phoenix
does) keeps one copy of a span sent twice.
"""

import hashlib
from uuid import UUID


def _digest(seed: str, size: int) -> int:
    value = int.from_bytes(hashlib.sha256(seed.encode()).digest()[:size], "big")
    return value or 1  # an all-zero id is invalid in OpenTelemetry


def trace_id_of(run: str) -> int:
    """The 128-bit trace id of the run whose stream is `run`."""
    return _digest(f"trace:{run}", 16)


def run_span_id(run: str) -> int:
    """The 64-bit id of the run's own span (`invoke_agent`)."""
    return _digest(f"run:{run}", 8)


def call_span_id(opened_by: UUID) -> int:
    """The 64-bit id of the span of the call whose first event has id `opened_by`."""
    return _digest(f"event:{opened_by}", 8)
