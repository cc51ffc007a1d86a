"""The recorder: validates published batches and appends them to the log.

Idempotency rule: recording the same message twice is safe. Event ids are chosen by
producers, and the store skips ids it already holds, so a redelivered message (a
worker killed mid-batch, a visibility timeout) leaves one copy in the log; a message
whose events of a stream the log holds in part is a second take of a step that came
out differently, left out whole and logged (`events.store.Diverged`).

Nothing a producer sends can stop the recorder: a message that is not a batch (or
not even Unicode text), an event that fails validation or that a column of the log
cannot hold, a second event with an id already in the message, or a batch whose
versions conflict goes to the dead-letter table with the reason, and the rest of the
message is recorded. It also writes the dead letters that a worker's main process
sends it (`record_dead_letter`; workers/bus/dead_letters.py).
"""

import base64
import binascii
import json
import logging
import re
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC
from typing import Any

import orjson
from pydantic import TypeAdapter, ValidationError

from events import ConflictError, Diverged, Event
from events.blobs import digest
from events.errors import StreamEnded, UnknownSchemaVersion, UpgradeFailed
from events.gc_pause import gc_paused
from events.store import EVENTS
from events.tables import text_limit
from events.upgrade import upgrade
from workers.bus.dead_letters import RAW_LIMIT, from_transit, visible
from workers.context import WorkerContext
from workers.errors import StreamBehind
from workers.metrics import (
    count_dead_letter,
    count_diverged,
    count_recorded,
    count_undeliverable,
    observe_batch,
    timed_append,
)

log = logging.getLogger(__name__)

_EVENTS = TypeAdapter(list[Event])
_EVENT = TypeAdapter(Event)


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
    try:
        size = len(message.encode())
    except UnicodeEncodeError as exc:
        # A lone surrogate: JSON can carry one as an escape (`"\\ud800"`), and the
        # worker's JSON decoder turns it into text that no database can store.
        return _reject(ctx, f"message is not valid Unicode text: {_surrogate(exc)}", message)
    if size > ctx.max_message_bytes:
        return _reject(
            ctx, f"message of {size} bytes exceeds the {ctx.max_message_bytes} limit", message
        )
    try:
        body = orjson.loads(message)
    except orjson.JSONDecodeError as exc:
        return _reject(ctx, f"message is not JSON: {exc}", message)
    long_numbers = _may_hold_wide(body) and _LONG_NUMBER.search(message) is not None
    if long_numbers:
        # orjson reads an integer past 64 bits as a float, so the event would not be
        # stored as sent (found by the fuzz suite); the standard decoder keeps it exact,
        # and `_without_wide_ints` dead-letters it. Rare: checked only then.
        body = json.loads(message)
    if not isinstance(body, dict) or not isinstance(body.get("events"), list):
        return _reject(ctx, "message is not an object with an 'events' list", message)
    observe_batch(len(body["events"]))
    try:
        blobs = _decode_blobs(body.get("blobs") or {})
    except ValueError as exc:
        return _reject(ctx, str(exc), message)
    events, letters = _validate(body["events"])
    events, duplicates = _first_of_each_id(events)
    letters += duplicates
    if "\\u0000" in message:  # the only way JSON carries NUL: rare, so checked only then
        events, unstorable = _without_nul(events)
        letters += unstorable
    if long_numbers:
        events, wide = _without_wide_ints(events)
        letters += wide
    events, beyond = _within_the_columns(events)
    letters += beyond
    appended, skipped, conflicted = _append(ctx, events, blobs, final)
    letters += conflicted
    for reason, item in letters:  # written once: after any `StreamBehind` retry is over
        _dead_event(ctx, reason, item)
    return RecordOutcome(appended=appended, skipped=skipped, dead=len(letters))


def _surrogate(exc: UnicodeEncodeError) -> str:
    char = exc.object[exc.start]
    return f"a lone surrogate (U+{ord(char):04X}) at character {exc.start}"


def _reject(ctx: WorkerContext, reason: str, message: str) -> RecordOutcome:
    log.warning("dead letter: %s", reason)
    ctx.store.dead_letter(reason, message[:RAW_LIMIT])
    count_dead_letter(reason)
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


def _first_of_each_id(events: list[Event]) -> tuple[list[Event], list[Letter]]:
    """The first event of each id; every later one with an id already seen is a dead
    letter. The store would keep one of them silently; within one message a second
    event with the same id is a producer's mistake (a redelivery is a whole message
    again, and is skipped by the store), whether it repeats the first or not."""
    first: dict[uuid.UUID, Event] = {}
    kept: list[Event] = []
    letters: list[Letter] = []
    for event in events:
        seen = first.setdefault(event.id, event)
        if seen is event:
            kept.append(event)
            continue
        what = "an identical copy" if seen == event else "a different event"
        reason = f"duplicate id: an earlier event of this message has the same id ({what})"
        letters.append((reason, event.model_dump(mode="json")))
    return kept, letters


def _without_nul(events: list[Event]) -> tuple[list[Event], list[Letter]]:
    """Events holding a NUL character are dead letters: PostgreSQL text and jsonb cannot
    store one (a tool printing binary output), and the log is the same on every backend."""
    return _without(events, _has_nul, "contains a NUL character, which the log cannot store")


def _without_wide_ints(events: list[Event]) -> tuple[list[Event], list[Letter]]:
    """Events holding an integer outside the signed 64-bit range are dead letters: the
    log's JSON columns would not give it back as it was sent."""
    return _without(events, _is_wide_int, "an integer outside the 64-bit range")


def _without(
    events: list[Event], bad: Callable[[Any], bool], what: str
) -> tuple[list[Event], list[Letter]]:
    """`events` without those holding a `bad` part, which become dead letters."""
    kept: list[Event] = []
    letters: list[Letter] = []
    for event in events:
        item = event.model_dump(mode="json")
        path = _first_path(item, bad)
        if path is None:
            kept.append(event)
        else:
            letters.append((f"invalid event: {path}: {what}", item))
    return kept, letters


_LONG_NUMBER = re.compile(r"\d{19,}")
"""A run of digits that may be an integer past 64 bits (2**63 has 19 digits)."""

WIDE = 2**63
"""The magnitude from which a number is past the signed 64-bit range."""


def _may_hold_wide(body: Any) -> bool:
    """Whether the message's events, as orjson read them, hold a number of magnitude 2**63
    or more: an integer past 64 bits comes out of orjson as such a float (or, below 2**64,
    as such an int), so without one the message holds none. Looks at the events only: the
    blobs (most of a message's text: the model's requests) are strings."""
    events = body.get("events") if isinstance(body, dict) else body
    stack = [events]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
        elif isinstance(value, int | float) and not isinstance(value, bool) and abs(value) >= WIDE:
            return True
    return False


INT_MAX = 2**31 - 1
"""The largest `version` the log stores (a PostgreSQL `integer` column)."""
_TEXT_LIMITS = {name: text_limit(EVENTS.c[name]) for name in ("stream", "correlation_id", "actor")}
"""The characters each text column of the log holds."""


def _within_the_columns(events: list[Event]) -> tuple[list[Event], list[Letter]]:
    """Events a column of the log cannot hold are dead letters: valid as events, but an
    append would fail on one backend or read back wrong on another (found by
    tests/workers/test_recorder_fuzz.py), and the log is the same on every backend."""
    kept: list[Event] = []
    letters: list[Letter] = []
    for event in events:
        problem = _column_problem(event)
        if problem is None:
            kept.append(event)
        else:
            letters.append((f"invalid event: {problem}", event.model_dump(mode="json")))
    return kept, letters


def _column_problem(event: Event) -> str | None:
    if event.version > INT_MAX:
        return f"version: {event.version} is more than the log stores ({INT_MAX})"
    for name, limit in _TEXT_LIMITS.items():
        value = getattr(event, name)
        if value is not None and len(value) > limit:
            return f"{name}: {len(value)} characters, more than the log stores ({limit})"
    try:
        year = event.occurred_at.astimezone(UTC).year
    except OverflowError:  # before year 1 or after 9999 once in UTC
        year = 0
    if year < 1000:  # SQLite's text form has `%Y` unpadded below 1000: it cannot read it
        return "occurred_at: outside the years 1000 to 9999 in UTC, which the log stores"
    return None


def _first_path(value: Any, bad: Callable[[Any], bool], path: str = "") -> str | None:
    """The dotted path of the first part of `value` (a value or a string key) that is
    `bad`, if any."""
    if bad(value):
        return path or "<event>"
    if isinstance(value, dict):
        pairs: Any = value.items()
    elif isinstance(value, list):
        pairs = enumerate(value)
    else:
        return None
    for key, item in pairs:
        where = f"{path}.{key}" if path else str(key)
        if isinstance(key, str) and bad(key):
            return where
        found = _first_path(item, bad, where)
        if found is not None:
            return found
    return None


def _has_nul(value: Any) -> bool:
    return isinstance(value, str) and "\x00" in value


def _is_wide_int(value: Any) -> bool:
    """An integer outside the signed 64-bit range (found by the fuzz suite: SQLite's JSON
    stores it as a float)."""
    return isinstance(value, int) and not isinstance(value, bool) and not -(2**63) <= value < 2**63


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
    try:
        raw = orjson.dumps(item, option=orjson.OPT_NON_STR_KEYS, default=str).decode()
    except TypeError:  # an integer past 64 bits, which orjson cannot write
        raw = json.dumps(item, default=str)
    log.warning("dead letter: %s", reason)
    ctx.store.dead_letter(
        reason,
        raw[:RAW_LIMIT],
        event_id=str(event_id)[:64] if event_id else None,
        stream=str(stream)[:200] if stream else None,
    )
    count_dead_letter(reason)


def _append(
    ctx: WorkerContext, events: Sequence[Event], blobs: dict[str, bytes], final: bool
) -> tuple[int, int, list[Letter]]:
    """Append the batch; on a conflict, append stream by stream so one stale stream
    does not hold back the others. Returns (appended, skipped, dead letters)."""
    if not events and not blobs:
        return 0, 0, []
    try:
        with timed_append():
            result = ctx.store.append(events, blobs)
    except ConflictError:
        return _append_by_stream(ctx, events, blobs, final)
    count_recorded(result.appended, result.skipped)
    _say_diverged(result.diverged)
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
            with timed_append():
                result = ctx.store.append(stream_events)
        except StreamEnded as exc:  # a take that lost the run, or a producer gone wrong
            for event in stream_events:
                letters.append((str(exc), event.model_dump(mode="json")))
            continue
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
        count_recorded(result.appended, result.skipped)
        _say_diverged(result.diverged)
        _react(ctx, result.appended)
    if behind:
        raise StreamBehind("; ".join(behind))
    return appended, skipped, letters


def _say_diverged(diverged: Sequence[Diverged]) -> None:
    """A second take of a step that came out differently is left out whole (the store's
    rule): said and counted, because it means the step ran twice (a reaction sent again,
    the reaper)."""
    count_diverged(len(diverged))
    for take in diverged:
        first, last = take.sent
        log.warning(
            "%s: a second take of the step that wrote v%d came out differently (v%d-v%d sent,"
            " %d already recorded): the first take stands, %d events left out",
            take.stream,
            first,
            first,
            last,
            take.stored,
            take.events - take.stored,
        )


def _react(ctx: WorkerContext, appended: list[Event]) -> None:
    """Catch the reactor up now (the fast path). The reactions are sent from the log,
    past the reactor's checkpoint: a recorder killed before this line loses none of
    them, the next catch-up (`labrxiv reactor`, the watcher, the next append) sends them."""
    if appended and ctx.reactor is not None:
        positions = [event.position for event in appended if event.position is not None]
        ctx.reactor.poke(max(positions) if len(positions) == len(appended) else None)


def record_dead_letter(ctx: WorkerContext, queue: str, reason: str, raw: str) -> None:
    """Write a dead letter that a worker's main process found and sent here: an item
    on `queue` that was not a message kombu could read, or a message that was not a
    task the worker could run. `raw` is the bytes as kept (base64, size-capped).

    Running it twice writes the letter twice (the table has no key to skip it by):
    harmless, and only after a worker died between the write and the ack."""
    data = from_transit(raw)
    if data is None:  # not sent by our consumer: keep the text as it came
        reason, data = f"{reason} (raw not base64, kept as sent)", raw.encode(errors="replace")
    ctx.store.dead_letter(f"{queue} queue: {reason}"[:RAW_LIMIT], visible(data[:RAW_LIMIT]))
    count_undeliverable()
