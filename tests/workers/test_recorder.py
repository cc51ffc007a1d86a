"""The recorder: good events are appended, bad ones dead-lettered with a reason, and
nothing a producer sends crashes it; recording a message twice is harmless."""

import base64
import hashlib
import json
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from events import ConflictError, Event, EventStore
from events.ids import derived_id, new_id
from events.payloads import RunStarted, ToolInvoked, ToolReturned
from events.recorded import Recorded
from events.wire import encode_batch
from tests.simulated import simulated_run
from workers.bus.memory import MemoryBus
from workers.context import WorkerContext
from workers.errors import StreamBehind
from workers.reactor import Reactor
from workers.recorder import RAW_LIMIT, RecordOutcome, record_message

AT = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)


DummyBus = MemoryBus
"""Collects what is sent (the recorder itself sends nothing but its reactions)."""


class ReactionSpy:
    """A reaction that records every call it gets."""

    def __init__(self) -> None:
        self.calls: list[list[Recorded]] = []

    def __call__(self, store: EventStore, bus: Any, events: Sequence[Recorded]) -> None:
        self.calls.append(list(events))

    @property
    def ids(self) -> list[uuid.UUID]:
        return [e.id for call in self.calls for e in call]


@pytest.fixture
def store(store_url: str) -> EventStore:
    return EventStore.from_url(store_url)


@pytest.fixture
def spy() -> ReactionSpy:
    return ReactionSpy()


@pytest.fixture
def ctx(store: EventStore, spy: ReactionSpy) -> WorkerContext:
    bus = DummyBus()
    return WorkerContext(store=store, bus=bus, reactor=Reactor(store, bus, [spy]))


def tool_event(stream: str, version: int, **payload: Any) -> Event:
    return Event(
        id=new_id(),
        stream=stream,
        version=version,
        occurred_at=AT + timedelta(seconds=version),
        payload=ToolInvoked(call_id=f"c{version}", tool="bash", **payload),
    )


def run(name: str, attempts: int = 2) -> list[Event]:
    return list(simulated_run(name, AT, attempts=attempts))


def message_with(items: list[Any], blobs: dict[str, str] | None = None) -> str:
    body: dict[str, Any] = {"events": items}
    if blobs is not None:
        body["blobs"] = blobs
    return json.dumps(body)


def as_items(events: Sequence[Event]) -> list[dict[str, Any]]:
    return [e.model_dump(mode="json") for e in events]


def stored_ids(store: EventStore) -> list[uuid.UUID]:
    return [r.id for r in store.iter_records()]


# -- the happy path and redelivery -------------------------------------------------


def test_a_clean_batch_is_appended_and_reacted_to(
    ctx: WorkerContext, store: EventStore, spy: ReactionSpy
) -> None:
    events = run("a") + run("b")
    outcome = record_message(ctx, encode_batch(events))
    assert outcome == RecordOutcome(appended=len(events), skipped=0, dead=0)
    assert stored_ids(store) == [e.id for e in events]
    assert store.dead_letters() == []
    [call] = spy.calls
    assert [e.id for e in call] == [e.id for e in events]
    assert all(e.position is not None and e.recorded_at is not None for e in call)
    assert ctx.bus.sent == []


def test_redelivery_duplicates_nothing_and_reacts_to_nothing(
    ctx: WorkerContext, store: EventStore, spy: ReactionSpy
) -> None:
    message = encode_batch(run("a"))
    first = record_message(ctx, message)
    second = record_message(ctx, message)
    assert first.appended == len(run("a")) > 0
    assert second == RecordOutcome(appended=0, skipped=first.appended, dead=0)
    assert store.count() == first.appended
    assert len(spy.calls) == 1
    assert store.dead_letters() == []


def _take(stream: str, after: Event, tools: Sequence[str]) -> list[Event]:
    """One take of the lab step that follows `after`, as `workers.lab.step` writes it: each
    event's id derived from its stream and version and the time of the event before the
    step, so every take of the step gives its first events the same ids."""
    return [
        Event(
            id=derived_id(f"{stream}:{after.version + 1 + i}", after.occurred_at),
            stream=stream,
            version=after.version + 1 + i,
            occurred_at=after.occurred_at + timedelta(seconds=1 + i),
            payload=ToolInvoked(call_id=f"{stream}:{after.version + 1}", tool=tool),
        )
        for i, tool in enumerate(tools)
    ]


def _started(stream: str) -> Event:
    payload = RunStarted(task="t", lab="lab-0", policy="search")
    return Event(id=new_id(), stream=stream, version=0, occurred_at=AT, payload=payload)


def test_a_longer_second_take_of_a_step_is_left_out_whole(
    ctx: WorkerContext, store: EventStore, spy: ReactionSpy
) -> None:
    """A step taken twice (a redelivery, the reaper) whose second take came out longer:
    its first events have the first take's ids, and the rest are not appended after the
    first take's, which would splice the two into one trajectory."""
    start = _started("run-a")
    first = _take("run-a", start, ["evaluate", "bash"])
    second = _take("run-a", start, ["evaluate", "bash", "python"])
    assert [e.id for e in second[:2]] == [e.id for e in first]
    record_message(ctx, encode_batch([start, *first]))
    outcome = record_message(ctx, encode_batch(second))
    assert outcome == RecordOutcome(appended=0, skipped=3, dead=0)
    assert stored_ids(store) == [e.id for e in [start, *first]]
    assert len(spy.calls) == 1  # nothing new to react to


def test_a_second_take_recorded_after_the_next_step_is_no_conflict(
    ctx: WorkerContext, store: EventStore
) -> None:
    """What a fresh-clone CI run of the chaos suite met once: a step taken twice, its
    second take longer and recorded only after the step that followed the first take.
    Its new events were dead letters, 'version conflict: … expected version 9, got 8
    (stream is at 8; the producer is stale or skipped one)'. The first take stands."""
    start = _started("run-a")
    head = _take("run-a", start, ["write_file"] * 5)  # v1-v5
    first = _take("run-a", head[-1], ["evaluate", "bash"])  # the step after v5: v6-v7
    after = _take("run-a", first[-1], ["read_file"])  # the step after v7: v8
    second = _take("run-a", head[-1], ["evaluate", "bash", "a", "b", "c"])  # v6-v10
    for batch in ([start, *head], first, after):
        assert record_message(ctx, encode_batch(batch)).dead == 0
    outcome = record_message(ctx, encode_batch(second))
    assert outcome == RecordOutcome(appended=0, skipped=5, dead=0)
    assert store.dead_letters() == []
    assert stored_ids(store) == [e.id for e in [start, *head, *first, *after]]


def test_an_empty_batch_does_nothing(ctx: WorkerContext, store: EventStore, spy: ReactionSpy):
    assert record_message(ctx, encode_batch([])) == RecordOutcome(0, 0, 0)
    assert store.count() == 0 and store.dead_letters() == [] and spy.calls == []


# -- bad events -------------------------------------------------------------------


def test_one_malformed_event_in_the_middle_is_dead_lettered_the_rest_appended(
    ctx: WorkerContext, store: EventStore, spy: ReactionSpy
) -> None:
    before, after = run("a"), run("b")
    bad = as_items(run("c")[:1])[0]
    del bad["payload"]["lab"]
    outcome = record_message(ctx, message_with(as_items(before) + [bad] + as_items(after)))
    assert outcome == RecordOutcome(appended=len(before) + len(after), skipped=0, dead=1)
    assert stored_ids(store) == [e.id for e in before + after]
    assert spy.ids == [e.id for e in before + after]
    [letter] = store.dead_letters()
    assert letter.reason.startswith("invalid event:")
    assert "payload.run.started.lab" in letter.reason
    assert "schema_version" not in letter.reason  # the consequence is not reported
    assert letter.event_id == bad["id"]
    assert letter.stream == bad["stream"]
    assert json.loads(letter.raw) == bad


@pytest.mark.parametrize(
    ("change", "named"),
    [
        (lambda item: item["payload"].update(seed="many"), "payload.run.started.seed"),
        (lambda item: item["payload"].update(type="run.exploded"), "payload"),
        (lambda item: item.update(stream="Not A Stream"), "stream"),
        (lambda item: item.update(version=-1), "version"),
        (lambda item: item.update(occurred_at="2025-03-01T12:00:00"), "occurred_at"),
        (lambda item: item.update(schema_version=0), "schema_version"),
        (lambda item: item.update(schema_version=-3), "schema_version"),
        (lambda item: item["payload"].update(type=["not", "hashable"]), "payload"),
        (lambda item: item["payload"].update(type={"nested": 1}), "payload"),
        (lambda item: item.update(payload="a string"), "payload"),
        (lambda item: item.update(extra_field=1), "extra_field"),
    ],
)
def test_each_kind_of_bad_event_is_dead_lettered_naming_the_field(
    ctx: WorkerContext, store: EventStore, change: Any, named: str
) -> None:
    good = run("a")
    [bad] = as_items(run("b")[:1])
    change(bad)
    outcome = record_message(ctx, message_with([bad, *as_items(good)]))
    assert (outcome.appended, outcome.dead) == (len(good), 1)
    [letter] = store.dead_letters()
    assert f"{named}:" in letter.reason
    assert stored_ids(store) == [e.id for e in good]


def test_items_that_are_not_objects_are_dead_lettered(
    ctx: WorkerContext, store: EventStore
) -> None:
    good = run("a")
    outcome = record_message(ctx, message_with([42, "text", None, *as_items(good)]))
    assert (outcome.appended, outcome.dead) == (len(good), 3)
    letters = store.dead_letters()
    assert sorted(d.raw for d in letters) == sorted(["42", '"text"', "null"])
    assert all(d.event_id is None and d.stream is None for d in letters)


def test_an_oversized_id_and_stream_are_cut_to_fit_the_dead_letter_columns(
    ctx: WorkerContext, store: EventStore
) -> None:
    [bad] = as_items(run("b")[:1])
    bad.update(id="i" * 300, stream="s" * 1000)
    assert record_message(ctx, message_with([bad])).dead == 1
    [letter] = store.dead_letters()
    assert letter.event_id == "i" * 64
    assert letter.stream == "s" * 200


def test_an_event_with_a_nul_character_is_dead_lettered_on_every_backend(
    ctx: WorkerContext, store: EventStore, spy: ReactionSpy
) -> None:
    # A tool printing binary output puts NUL in its preview; PostgreSQL text cannot
    # hold it. The event is rejected with the field, the rest of the batch recorded.
    good = run("a")
    bad = Event(
        id=new_id(),
        stream="run-binary",
        version=0,
        occurred_at=AT,
        payload=ToolReturned(
            call_id="c", tool="bash", exit_code=0, duration_s=0.1, preview="\x7fELF\x00\x01"
        ),
    )
    outcome = record_message(ctx, encode_batch([*good, bad]))
    assert (outcome.appended, outcome.dead) == (len(good), 1)
    assert stored_ids(store) == [e.id for e in good]
    assert spy.ids == [e.id for e in good]
    [letter] = store.dead_letters()
    assert "payload.preview" in letter.reason and "NUL" in letter.reason
    assert letter.event_id == str(bad.id)


def test_an_integer_wider_than_64_bits_is_dead_lettered_on_every_backend(
    ctx: WorkerContext, store: EventStore
) -> None:
    """Found by the fuzz suite: SQLite read such an integer back as a float."""
    bad = Event(
        id=new_id(),
        stream="run-wide",
        version=0,
        occurred_at=AT,
        payload=ToolInvoked(call_id="c", tool="python", args={"n": -(2**63) - 1}),
    )
    fine = bad.model_copy(update={"id": new_id(), "stream": "run-fine"})
    fine = fine.model_copy(
        update={"payload": ToolInvoked(call_id="c", tool="python", args={"n": -(2**63)})}
    )
    # orjson (encode_batch) refuses such an integer; a producer with another encoder not.
    message = json.dumps({"events": [e.model_dump(mode="json") for e in (bad, fine)]})
    outcome = record_message(ctx, message)
    assert (outcome.appended, outcome.dead) == (1, 1)
    [letter] = store.dead_letters()
    assert "payload.args.n" in letter.reason and "64-bit" in letter.reason
    assert store.read_stream("run-fine")[0].payload.args == {"n": -(2**63)}


@pytest.mark.parametrize(
    ("event", "path"),
    [
        (tool_event("run-x", 0).model_copy(update={"actor": "lab\x00"}), "actor"),
        (tool_event("run-x", 0, args={"files": ["a", "b\x00"]}), "payload.args.files.1"),
        (tool_event("run-x", 0, args={"k\x00": 1}), "payload.args.k\\x00"),
    ],
)
def test_nul_anywhere_in_an_event_is_named(
    ctx: WorkerContext, store: EventStore, event: Event, path: str
) -> None:
    assert record_message(ctx, encode_batch([event])).dead == 1
    [letter] = store.dead_letters()
    assert letter.reason.startswith(f"invalid event: {path}: contains a NUL character")
    assert store.count() == 0


def test_an_escaped_backslash_u0000_is_not_a_nul(ctx: WorkerContext, store: EventStore) -> None:
    event = tool_event("run-x", 0, args={"text": "a literal \\u0000 in source code"})
    assert "\\u0000" in encode_batch([event])
    assert record_message(ctx, encode_batch([event])).appended == 1
    assert store.read()[0].payload.args == {"text": "a literal \\u0000 in source code"}


# -- bad messages -----------------------------------------------------------------


def test_a_message_that_is_not_json_is_dead_lettered(ctx: WorkerContext, store: EventStore):
    outcome = record_message(ctx, "{this is not json")
    assert outcome == RecordOutcome(appended=0, skipped=0, dead=1)
    [letter] = store.dead_letters()
    assert letter.reason.startswith("message is not JSON")
    assert letter.raw == "{this is not json"
    assert store.count() == 0


def test_a_message_with_a_nul_byte_is_dead_lettered_not_crashed_on(
    ctx: WorkerContext, store: EventStore
) -> None:
    outcome = record_message(ctx, "garbage\x00from a broken producer")
    assert outcome.dead == 1
    [letter] = store.dead_letters()
    assert letter.reason.startswith("message is not JSON")
    assert letter.raw.startswith("garbage") and letter.raw.endswith("from a broken producer")


@pytest.mark.parametrize("message", ["[1, 2]", '{"events": 5}', '{"evts": []}', "null", '"x"'])
def test_json_that_is_not_a_batch_is_dead_lettered(
    ctx: WorkerContext, store: EventStore, message: str
) -> None:
    assert record_message(ctx, message).dead == 1
    [letter] = store.dead_letters()
    assert letter.reason == "message is not an object with an 'events' list"
    assert letter.raw == message


def test_an_oversized_message_is_dead_lettered_unparsed_and_its_raw_cut(
    store: EventStore, spy: ReactionSpy
) -> None:
    bus = DummyBus()
    reactor = Reactor(store, bus, [spy])
    ctx = WorkerContext(store=store, bus=bus, reactor=reactor, max_message_bytes=100_000)
    events = [tool_event("run-big", v, args={"text": "x" * 3000}) for v in range(60)]
    message = encode_batch(events)
    assert len(message.encode()) > 100_000
    assert len(message) > RAW_LIMIT
    outcome = record_message(ctx, message)
    assert outcome == RecordOutcome(appended=0, skipped=0, dead=1)
    [letter] = store.dead_letters()
    assert f"message of {len(message.encode())} bytes exceeds the 100000 limit" == letter.reason
    assert letter.raw == message[:RAW_LIMIT]
    assert store.count() == 0 and spy.calls == []
    # The same events in messages under the limit go through.
    assert record_message(ctx, encode_batch(events[:20])).appended == 20


def test_the_size_limit_counts_bytes_not_characters(store: EventStore) -> None:
    ctx = WorkerContext(store=store, bus=DummyBus(), max_message_bytes=5_000)
    # 2,000 characters of 3 bytes each: 6,000 bytes.
    message = encode_batch([tool_event("run-a", 0, args={"text": "€" * 2000})])
    assert len(message) < 5_000 < len(message.encode())
    assert record_message(ctx, message).dead == 1
    assert store.count() == 0


# -- blobs ------------------------------------------------------------------------


def test_blobs_are_stored_with_the_batch(ctx: WorkerContext, store: EventStore) -> None:
    data = b"full tool output\n" * 1000
    key = hashlib.sha256(data).hexdigest()
    events = run("a")
    assert record_message(ctx, encode_batch(events, {key: data})).appended == len(events)
    assert store.get_blob(key) == data


def test_a_blob_with_a_wrong_hash_dead_letters_the_message(
    ctx: WorkerContext, store: EventStore, spy: ReactionSpy
) -> None:
    wrong = hashlib.sha256(b"other content").hexdigest()
    message = encode_batch(run("a"), {wrong: b"the real content"})
    assert record_message(ctx, message) == RecordOutcome(appended=0, skipped=0, dead=1)
    [letter] = store.dead_letters()
    assert letter.reason == (
        f"blob sent as {wrong} hashes to {hashlib.sha256(b'the real content').hexdigest()}"
    )
    assert letter.raw == message
    assert store.count() == 0 and store.get_blob(wrong) is None and spy.calls == []


@pytest.mark.parametrize(
    ("blobs", "reason"),
    [
        ({"k": "not base64!"}, "blob k is not valid base64"),
        ({"k": 12}, "blob k is not valid base64"),
        (["a", "b"], "'blobs' is not an object"),
    ],
)
def test_blobs_that_cannot_be_decoded_dead_letter_the_message(
    ctx: WorkerContext, store: EventStore, blobs: Any, reason: str
) -> None:
    assert record_message(ctx, message_with(as_items(run("a")), blobs)).dead == 1
    [letter] = store.dead_letters()
    assert letter.reason.startswith(reason)
    assert store.count() == 0


def test_blobs_still_stored_when_a_stream_conflicts(ctx: WorkerContext, store: EventStore):
    store.append(run("a")[:2])
    data = b"kept"
    key = hashlib.sha256(data).hexdigest()
    stale = tool_event("run-a", 1)
    fine = run("b")
    blobs = {key: base64.b64encode(data).decode()}
    outcome = record_message(ctx, message_with(as_items([stale, *fine]), blobs))
    assert (outcome.appended, outcome.dead) == (len(fine), 1)
    assert store.get_blob(key) == data


# -- version conflicts --------------------------------------------------------------


def test_a_conflicting_stream_is_dead_lettered_other_streams_appended(
    ctx: WorkerContext, store: EventStore, spy: ReactionSpy
) -> None:
    before = [tool_event("run-a", v) for v in range(3)]
    store.append(before)
    stale = [tool_event("run-a", 2), tool_event("run-a", 3)]  # version 2 is taken
    other_b = [tool_event("run-b", v) for v in range(2)]
    other_c = run("c")
    message = encode_batch([other_b[0], stale[0], *other_c, stale[1], other_b[1]])
    outcome = record_message(ctx, message)
    assert outcome == RecordOutcome(appended=len(other_b) + len(other_c), skipped=0, dead=2)
    assert [e.version for e in store.read_stream("run-a")] == [0, 1, 2]
    assert [e.id for e in store.read_stream("run-b")] == [e.id for e in other_b]
    assert [e.id for e in store.read_stream("run-c")] == [e.id for e in other_c]
    letters = store.dead_letters()
    assert len(letters) == 2
    assert all(d.reason.startswith("version conflict:") for d in letters)
    assert all("run-a" in d.reason and d.stream == "run-a" for d in letters)
    assert {d.event_id for d in letters} == {str(e.id) for e in stale}
    # Reactions come from the log: the events appended before (not by this recorder)
    # too, once each; the dead-lettered ones never.
    assert sorted(spy.ids) == sorted(e.id for e in before + other_b + other_c)


def test_a_version_gap_is_a_conflict(ctx: WorkerContext, store: EventStore) -> None:
    outcome = record_message(ctx, encode_batch([tool_event("run-a", 0), tool_event("run-a", 2)]))
    assert (outcome.appended, outcome.dead) == (0, 2)
    assert store.count() == 0
    assert all("version conflict" in d.reason for d in store.dead_letters())


def test_a_stream_behind_the_message_waits_for_its_earlier_part(
    ctx: WorkerContext, store: EventStore
) -> None:
    """Redelivery reordered a stream's two messages: the later part arrives first. On a
    try that is not the last, the message's other streams are recorded, nothing is
    dead-lettered (not even its invalid item, which a retry would letter again), and
    `StreamBehind` asks for a retry; once the earlier part is in, the retry records the
    rest and letters the invalid item once."""
    events = [tool_event("run-a", v) for v in range(4)]
    other = run("b")
    later = message_with([*as_items(events[2:]), *as_items(other), {"id": "not-a-uuid"}])
    with pytest.raises(StreamBehind, match="run-a is at version -1, the message starts at 2"):
        record_message(ctx, later, final=False)
    assert [e.id for e in store.read_stream("run-b")] == [e.id for e in other]
    assert store.read_stream("run-a") == [] and store.dead_letter_count() == 0
    assert record_message(ctx, encode_batch(events[:2])).appended == 2
    outcome = record_message(ctx, later, final=False)
    assert (outcome.appended, outcome.skipped, outcome.dead) == (2, len(other), 1)
    assert [e.id for e in store.read_stream("run-a")] == [e.id for e in events]
    assert store.dead_letter_count() == 1


def test_a_stream_filled_while_its_append_was_refused_is_retried(
    ctx: WorkerContext, store: EventStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another recorder appends the earlier part between this one's refused append and
    its look at the stream: the stream is then exactly at the message's first version,
    and the message is retried (it would now append), not dead-lettered."""
    store.append([tool_event("run-a", 0)])
    message = encode_batch([tool_event("run-a", 1)])
    append = store.append
    refusals = [ConflictError("run-a: version 1 is not next (a race)")] * 2

    def racing(events: Any, blobs: Any = None) -> Any:
        if events and refusals:
            raise refusals.pop()
        return append(events, blobs)

    monkeypatch.setattr(store, "append", racing)
    with pytest.raises(StreamBehind):
        record_message(ctx, message, final=False)
    assert store.dead_letter_count() == 0
    assert record_message(ctx, message, final=False).appended == 1


def test_on_its_last_try_a_stream_still_behind_is_dead_lettered(
    ctx: WorkerContext, store: EventStore
) -> None:
    outcome = record_message(ctx, encode_batch([tool_event("run-a", 2)]), final=True)
    assert (outcome.appended, outcome.dead) == (0, 1) and store.count() == 0
    assert store.dead_letters()[0].reason.startswith("version conflict:")


def test_a_redelivered_batch_with_a_conflict_keeps_its_good_streams_once(
    ctx: WorkerContext, store: EventStore, spy: ReactionSpy
) -> None:
    store.append([tool_event("run-a", 0)])
    good = run("b")
    message = encode_batch([tool_event("run-a", 0), *good])
    first = record_message(ctx, message)
    second = record_message(ctx, message)
    assert (first.appended, first.dead) == (len(good), 1)
    assert (second.appended, second.skipped) == (0, len(good))
    assert store.count() == 1 + len(good)
    assert len(spy.calls) == 1


def test_a_stale_producer_with_a_started_run_is_refused(
    ctx: WorkerContext, store: EventStore
) -> None:
    # Two producers both think they write version 0 of the same run.
    first = run("a")[:1]
    twin = Event(
        id=new_id(),
        stream=first[0].stream,
        version=0,
        occurred_at=AT,
        payload=RunStarted(task="t", lab="lab-2", policy="simulated"),
    )
    assert record_message(ctx, encode_batch(first)).appended == 1
    outcome = record_message(ctx, encode_batch([twin]))
    assert (outcome.appended, outcome.dead) == (0, 1)
    assert store.get(first[0].id) is not None and store.get(twin.id) is None


def test_events_after_a_run_finished_are_dead_lettered_at_once_naming_the_end(
    ctx: WorkerContext, store: EventStore
) -> None:
    """A take that lost the run (its worker stalled past its lease) sends its events after
    the run's end: refused on the first try, not waited for as a stream behind."""
    ended = run("a")
    store.append(ended)
    assert ended[-1].type == "run.finished"
    late = [tool_event("run-a", ended[-1].version + 1)]
    other = run("b")
    outcome = record_message(ctx, encode_batch([*late, *other]), final=False)
    assert (outcome.appended, outcome.dead) == (len(other), 1)
    assert store.stream_version("run-a") == ended[-1].version
    (letter,) = store.dead_letters()
    assert f"stream run-a ended at version {ended[-1].version}" in letter.reason
