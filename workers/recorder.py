"""The recorder: validates published batches and appends them to the log.

Idempotency rule: recording the same message twice is safe. Event ids are chosen by
producers, and the store skips ids it already holds, so a redelivered message (a
worker killed mid-batch, a visibility timeout) leaves one copy in the log.

Nothing a producer sends can stop the recorder: a message that is not a batch, an
event that fails validation, or a batch whose versions conflict goes to the
dead-letter table with the reason, and the rest of the message is recorded.
"""

import base64
import binascii
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson
from pydantic import TypeAdapter, ValidationError

from events import ConflictError, Event
from events.blobs import digest
from events.errors import UnknownSchemaVersion, UpgradeFailed
from events.gc_pause import gc_paused
from events.upgrade import upgrade
from workers.context import WorkerContext
from workers.errors import StreamBehind

log = logging.getLogger(__name__)

_EVENTS = TypeAdapter(list[Event])
_EVENT = TypeAdapter(Event)
RAW_LIMIT = 64 * 1024
"""How much of a rejected message is kept in the dead-letter table."""


@dataclass(frozen=True)
class RecordOutcome:
    """What recording one message did."""

    appended: int
    skipped: int
    dead: int


def record_message(ctx: WorkerContext, message: str, final: bool = True) -> RecordOutcome:
    """Validate and append one published message; dead-letter whatever is bad in it.

    A stream whose events in the message continue past the stream's last recorded
    version (a gap: an earlier message of the stream is still on its way, e.g.
    redelivered after this one) raises `StreamBehind` unless `final`, after every other
    stream of the message is recorded and before anything is dead-lettered, so a
    retry records it once the gap is filled; when `final`, it is dead-lettered as a
    version conflict."""
    with gc_paused():  # a batch's objects all live until it is appended
        return _record(ctx, message, final)


def _record(ctx: WorkerContext, message: str, final: bool) -> RecordOutcome:
    size = len(message.encode())
    if size > ctx.max_message_bytes:
        return _reject(
            ctx, f"message of {size} bytes exceeds the {ctx.max_message_bytes} limit", message
        )
    try:
        body = orjson.loads(message)
    except orjson.JSONDecodeError as exc:
        return _reject(ctx, f"message is not JSON: {exc}", message)
    if not isinstance(body, dict) or not isinstance(body.get("events"), list):
        return _reject(ctx, "message is not an object with an 'events' list", message)
    try:
        blobs = _decode_blobs(body.get("blobs") or {})
    except ValueError as exc:
        return _reject(ctx, str(exc), message)
    events, letters = _validate(body["events"])
    if "\\u0000" in message:  # the only way JSON carries NUL: rare, so checked only then
        events, unstorable = _without_nul(events)
        letters += unstorable
    appended, skipped, conflicted = _append(ctx, events, blobs, final)
    letters += conflicted
    for reason, item in letters:  # written once: after any `StreamBehind` retry is over
        _dead_event(ctx, reason, item)
    return RecordOutcome(appended=appended, skipped=skipped, dead=len(letters))


def _reject(ctx: WorkerContext, reason: str, message: str) -> RecordOutcome:
    log.warning("dead letter: %s", reason)
    ctx.store.dead_letter(reason, message[:RAW_LIMIT])
    return RecordOutcome(appended=0, skipped=0, dead=1)


def _decode_blobs(raw: Any) -> dict[str, bytes]:
    if not isinstance(raw, dict):
        raise ValueError("'blobs' is not an object of hash → base64 content")
    blobs = {}
    for key, text in raw.items():
        try:
            data = base64.b64decode(text, validate=True)
        except (binascii.Error, TypeError) as exc:
            raise ValueError(f"blob {key} is not valid base64: {exc}") from exc
        if digest(data) != key:
            raise ValueError(f"blob sent as {key} hashes to {digest(data)}")
        blobs[key] = data
    return blobs


Letter = tuple[str, Any]
"""A dead letter to write: the reason and the rejected item."""


def _validate(items: list[Any]) -> tuple[list[Event], list[Letter]]:
    """All valid events of the batch, in order, and a dead letter for each invalid one."""
    try:
        return _EVENTS.validate_python([_upgraded(i) for i in items]), []
    except (ValidationError, UnknownSchemaVersion, UpgradeFailed):
        pass  # find the bad ones below; the good ones are still recorded
    good: list[Event] = []
    letters: list[Letter] = []
    for item in items:
        try:
            good.append(_EVENT.validate_python(_upgraded(item)))
        except (ValidationError, UnknownSchemaVersion, UpgradeFailed) as exc:
            letters.append((f"invalid event: {_explain(exc)}", item))
    return good, letters


def _without_nul(events: list[Event]) -> tuple[list[Event], list[Letter]]:
    """Events holding a NUL character are dead letters: PostgreSQL text and jsonb cannot
    store one (a tool printing binary output), and the log is the same on every backend."""
    kept: list[Event] = []
    letters: list[Letter] = []
    for event in events:
        item = event.model_dump(mode="json")
        path = _nul_path(item)
        if path is None:
            kept.append(event)
        else:
            reason = f"invalid event: {path}: contains a NUL character, which the log cannot store"
            letters.append((reason, item))
    return kept, letters


def _nul_path(value: Any, path: str = "") -> str | None:
    """The dotted path of the first string (or key) in `value` holding a NUL, if any."""
    if isinstance(value, str):
        return (path or "<event>") if "\x00" in value else None
    if isinstance(value, dict):
        pairs: Any = value.items()
    elif isinstance(value, list):
        pairs = enumerate(value)
    else:
        return None
    for key, item in pairs:
        where = f"{path}.{key}" if path else str(key)
        if isinstance(key, str) and "\x00" in key:
            return where
        found = _nul_path(item, where)
        if found is not None:
            return found
    return None


def _upgraded(item: Any) -> Any:
    return upgrade(item) if isinstance(item, dict) else item


def _explain(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        return "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '<event>'}: {err['msg']}"
            for err in exc.errors()
            if err["type"] != "default_factory_not_called"  # a consequence, not a cause
        )
    return str(exc)


def _dead_event(ctx: WorkerContext, reason: str, item: Any) -> None:
    event_id = item.get("id") if isinstance(item, dict) else None
    stream = item.get("stream") if isinstance(item, dict) else None
    raw = orjson.dumps(item, option=orjson.OPT_NON_STR_KEYS, default=str).decode()
    log.warning("dead letter: %s", reason)
    ctx.store.dead_letter(
        reason,
        raw[:RAW_LIMIT],
        event_id=str(event_id)[:64] if event_id else None,
        stream=str(stream)[:200] if stream else None,
    )


def _append(
    ctx: WorkerContext, events: Sequence[Event], blobs: dict[str, bytes], final: bool
) -> tuple[int, int, list[Letter]]:
    """Append the batch; on a conflict, append stream by stream so one stale stream
    does not hold back the others. Returns (appended, skipped, dead letters)."""
    if not events and not blobs:
        return 0, 0, []
    try:
        result = ctx.store.append(events, blobs)
    except ConflictError:
        return _append_by_stream(ctx, events, blobs, final)
    _react(ctx, result.appended)
    return len(result.appended), result.skipped, []


def _append_by_stream(
    ctx: WorkerContext, events: Sequence[Event], blobs: dict[str, bytes], final: bool
) -> tuple[int, int, list[Letter]]:
    by_stream: dict[str, list[Event]] = {}
    for event in events:
        by_stream.setdefault(event.stream, []).append(event)
    appended = skipped = 0
    letters: list[Letter] = []
    behind: list[str] = []
    ctx.store.append([], blobs)
    for stream, stream_events in by_stream.items():
        try:
            result = ctx.store.append(stream_events)
        except ConflictError as exc:
            last = ctx.store.stream_version(stream)
            # `last + 1` too: the earlier part may have been recorded (by another
            # recorder) between the refused append and this read; the retry appends.
            if not final and stream_events[0].version >= last + 1:
                behind.append(
                    f"{stream} is at version {last}, the message starts at "
                    f"{stream_events[0].version}"
                )
                continue
            for event in stream_events:
                letters.append((f"version conflict: {exc}", event.model_dump(mode="json")))
            continue
        appended += len(result.appended)
        skipped += result.skipped
        _react(ctx, result.appended)
    if behind:
        raise StreamBehind("; ".join(behind))
    return appended, skipped, letters


def _react(ctx: WorkerContext, appended: list[Event]) -> None:
    if not appended:
        return
    for reaction in ctx.reactions:
        reaction(ctx, appended)
