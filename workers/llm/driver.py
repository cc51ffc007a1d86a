"""The write-ahead model-call driver: what any caller that records its model calls as
events uses (an `llm` lab's steps, a reviewer's steps), not tied to a lab run.

A call is written ahead (`model.called`, with its request in the blob table) by one step
and sent by the next, which the recording triggers: a crash after the provider billed
the call still shows in the ledger as a call of unknown outcome. Sending leaves a marker
outside every workspace first; a step delivered again that finds the marker knows the
call's outcome is unknown and tries the request again as a new attempt, never under the
same call id. After a failure the next attempt is due when the gateway's wait is over,
counted from when the failure was recorded, so a step taken again waits until the same
moment; the step asks the bus to run it again then (`RetryLater`) unless the bus cannot
(`final`), and waits in place only then.
"""

import hashlib
import logging
import time
from datetime import datetime, timedelta
from pathlib import Path

from events import EventStore
from events.bounded_cache import BoundedCache
from events.ids import utcnow
from events.payloads import ModelCalled, ModelFailed, Payload
from workers.errors import RetryLater
from workers.llm.gateway import Gateway
from workers.llm.request import ModelRequest, PreparedCall

log = logging.getLogger(__name__)

Out = tuple[list[Payload], dict[str, bytes]]

PreparedCalls = BoundedCache[str, PreparedCall]
"""Calls a worker wrote ahead, by request hash (`WorkerContext.prepared`): the step that
sends one usually runs on the worker that prepared it, and then need not fetch and parse
the request again."""


def write_ahead(model: Gateway, request: ModelRequest, calls: PreparedCalls) -> PreparedCall:
    """The first attempt of `request`, ready to record (its `called` and `blobs`), kept in
    `calls` for the step that sends it."""
    prepared = model.prepare(request)
    assert prepared.called.request is not None
    calls.put(prepared.called.request.sha256, prepared)
    return prepared


def send(
    model: Gateway,
    store: EventStore,
    inflight: Path,
    called: ModelCalled,
    who: str,
    calls: PreparedCalls,
) -> Out:
    """Send the recorded call `called` (`who`: the stream, for the log) and return its
    outcome's events; the next attempt instead when an earlier delivery died sending it.
    The request is taken from `calls` when this worker wrote it ahead."""
    marker = inflight / hashlib.sha256(called.call_id.encode()).hexdigest()
    if marker.exists():
        log.warning("%s: call %s was interrupted; outcome unknown", who, called.call_id)
        return next_attempt(called)
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text(called.call_id)  # kept: a redelivery must not send this id again
    outcome = model.send(_prepared(store, called, calls))
    return [outcome.event], outcome.blobs


def after_failure(
    model: Gateway, called: ModelCalled, failed: ModelFailed, failed_at: datetime, final: bool
) -> Out:
    """The next attempt of a failed call once the gateway's wait is over (raises
    `RetryLater` while it is not, unless `final`); the caller ends its work when the
    gateway gave up (`failed.will_retry` false) instead of calling this."""
    wait = model.retry_wait(called.attempt, failed.retry_after_s, failed.call_id)
    due = failed_at + timedelta(seconds=wait)
    left = min(wait, (due - utcnow()).total_seconds())
    if left > 0:
        if not final:
            raise RetryLater(f"the next attempt of {called.request_id} is due", delay_s=left)
        time.sleep(left)  # a bus that runs nothing again later (the in-process one)
    return next_attempt(called)


def next_attempt(called: ModelCalled) -> Out:
    """The same request again as the next attempt; its body is recorded with the first."""
    attempt = called.attempt + 1
    again = called.model_copy(
        update={"attempt": attempt, "call_id": f"{called.request_id}/{attempt}"}
    )
    return [again], {}


def _prepared(store: EventStore, called: ModelCalled, calls: PreparedCalls) -> PreparedCall:
    """The recorded call ready to send: its request from memory, or from the blob table."""
    known = calls.pop(called.request.sha256 if called.request else "")
    if known is not None and known.called == called:
        return known
    return PreparedCall.restore(called, _request_blob(store, called))


def _request_blob(store: EventStore, called: ModelCalled) -> bytes:
    data = store.get_blob(called.request.sha256) if called.request else None
    if data is None:
        raise RuntimeError(f"the request of call {called.call_id} is not in the blob table")
    return data
