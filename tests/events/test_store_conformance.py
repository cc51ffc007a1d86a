"""The event store's rules, checked against every backend (the `store_url` fixture).

One suite for SQLite and PostgreSQL, as the eventsourcing library does with its
recorder test case: a backend is correct when it passes all of it.
"""

import gc
import hashlib
import subprocess
import sys
import time
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta, timezone

import pytest
from sqlalchemy import text

from events import AppendResult, ConflictError, Event, EventStore
from events.errors import BlobMismatch, StreamEnded
from events.ids import new_id
from events.payloads import (
    ExperimentScored,
    Payload,
    RunFinished,
    RunStarted,
    ToolInvoked,
)
from events.recorded import Recorded

T0 = datetime(2025, 3, 1, 12, 0, 0, 123456, tzinfo=UTC)


def make_event(stream: str, version: int, payload: Payload | None = None, **extra) -> Event:
    return Event(
        id=new_id(),
        stream=stream,
        version=version,
        occurred_at=T0 + timedelta(seconds=version),
        payload=payload or ToolInvoked(call_id=f"c{version}", tool="bash", args={"n": version}),
        **extra,
    )


def make_stream(name: str, count: int, start: int = 0) -> list[Event]:
    return [make_event(name, version) for version in range(start, start + count)]


def new_stream() -> str:
    return f"run-{uuid.uuid4()}"


@pytest.fixture
def store(store_url: str) -> EventStore:
    return EventStore.from_url(store_url)


def ids(events: Sequence[Event]) -> list[uuid.UUID]:
    return [e.id for e in events]


# -- idempotency -----------------------------------------------------------------


def test_append_returns_positions_and_recorded_at(store: EventStore) -> None:
    batch = make_stream(new_stream(), 3)
    result = store.append(batch)
    assert isinstance(result, AppendResult)
    assert result.skipped == 0
    assert ids(result.appended) == ids(batch)
    assert all(e.position is not None and e.position > 0 for e in result.appended)
    assert all(e.recorded_at is not None for e in result.appended)
    assert [e.position for e in store.read()] == [e.position for e in result.appended]


def test_same_batch_twice_keeps_one_copy(store: EventStore) -> None:
    batch = make_stream(new_stream(), 4)
    first = store.append(batch)
    again = store.append(batch)
    assert len(first.appended) == 4
    assert again.appended == []
    assert again.skipped == 4
    assert store.count() == 4
    assert ids(store.read()) == ids(batch)


def test_a_stream_part_the_log_partly_holds_is_left_out_whole(store: EventStore) -> None:
    """A batch's events of one stream are one take of a step: when the log holds some of
    them already, the rest are a second take that came out differently (a longer one), and
    appending them would splice two takes into one trajectory."""
    stream, other = new_stream(), new_stream()
    first_take = make_stream(stream, 3)
    store.append(first_take)
    second_take = first_take + make_stream(stream, 2, start=3)
    elsewhere = make_stream(other, 2)
    result = store.append(second_take + elsewhere)
    assert ids(result.appended) == ids(elsewhere)  # other streams of the batch go in
    assert result.skipped == 5
    assert [(d.stream, d.sent, d.events, d.stored) for d in result.diverged] == [
        (stream, (0, 4), 5, 3)
    ]
    assert ids(store.read_stream(stream)) == ids(first_take)
    # Whole takes already held, and new ones, are no divergence.
    again = store.append(first_take + make_stream(new_stream(), 1))
    assert again.diverged == () and again.skipped == 3 and len(again.appended) == 1


def test_duplicate_id_inside_one_batch_is_stored_once(store: EventStore) -> None:
    event = make_event(new_stream(), 0)
    result = store.append([event, event])
    assert ids(result.appended) == [event.id]
    assert result.skipped == 1
    assert store.count() == 1


def test_stored_id_wins_over_a_different_event_with_the_same_id(store: EventStore) -> None:
    stream = new_stream()
    original = make_event(stream, 0, RunFinished(reason="done", detail="first"))
    store.append([original])
    imposter = original.model_copy(update={"payload": RunFinished(reason="error", detail="x")})
    result = store.append([imposter])
    assert result.skipped == 1
    assert store.get(original.id).payload == original.payload


# -- conflicts and atomicity ---------------------------------------------------


def test_stale_version_conflicts_and_writes_nothing(store: EventStore) -> None:
    stream = new_stream()
    store.append(make_stream(stream, 3))
    stale = [make_event(stream, 2), make_event(stream, 3)]
    with pytest.raises(ConflictError, match="expected version 3, got 2"):
        store.append(stale)
    assert store.count() == 3
    assert all(store.get(e.id) is None for e in stale)


def test_version_gap_conflicts(store: EventStore) -> None:
    stream = new_stream()
    store.append(make_stream(stream, 2))
    with pytest.raises(ConflictError, match="expected version 2, got 3"):
        store.append([make_event(stream, 3)])
    assert store.stream_version(stream) == 1


def test_a_run_that_finished_takes_no_more_events(store: EventStore) -> None:
    stream, other = new_stream(), new_stream()
    store.append(
        [*make_stream(stream, 2), make_event(stream, 2, RunFinished(reason="done"))]
        + make_stream(other, 1)
    )
    late = [make_event(stream, 3), make_event(stream, 4, RunFinished(reason="error"))]
    with pytest.raises(StreamEnded, match=f"stream {stream} ended at version 2"):
        store.append([*late, make_event(other, 1)])
    assert store.stream_version(stream) == 2 and store.stream_version(other) == 0
    ends_early = [make_event(other, 1, RunFinished(reason="done")), make_event(other, 2)]
    with pytest.raises(StreamEnded, match=f"stream {other} ends at version 1 in this batch"):
        store.append(ends_early)  # an end followed in its own batch
    assert store.stream_version(other) == 0
    with pytest.raises(ConflictError):  # a second end, at the end's own version
        store.append([make_event(stream, 2, RunFinished(reason="done"))])
    store.append([make_event(other, 1)])  # another stream goes on


def test_new_stream_must_start_at_version_zero(store: EventStore) -> None:
    with pytest.raises(ConflictError):
        store.append([make_event(new_stream(), 1)])
    assert store.count() == 0


def test_two_events_claiming_one_version_in_a_batch_conflict(store: EventStore) -> None:
    stream = new_stream()
    with pytest.raises(ConflictError):
        store.append([make_event(stream, 0), make_event(stream, 0)])
    assert store.count() == 0


def test_batch_is_atomic_when_a_later_event_conflicts(store: EventStore) -> None:
    taken = new_stream()
    store.append(make_stream(taken, 2))
    good_a = make_stream(new_stream(), 3)
    good_b = make_stream(new_stream(), 2)
    bad = make_event(taken, 0)  # version 0 of `taken` is already stored
    with pytest.raises(ConflictError):
        store.append([*good_a, *good_b, bad])
    assert store.count() == 2
    assert all(store.get(e.id) is None for e in [*good_a, *good_b, bad])
    # The store is still usable and the good streams append afterwards.
    assert len(store.append([*good_a, *good_b]).appended) == 5


def test_conflicting_batch_writes_none_of_its_blobs(store: EventStore) -> None:
    stream = new_stream()
    store.append(make_stream(stream, 1))
    data = b"output that should not be kept"
    key = hashlib.sha256(data).hexdigest()
    with pytest.raises(ConflictError):
        store.append([make_event(stream, 0)], {key: data})
    assert store.get_blob(key) is None


# -- reading -------------------------------------------------------------------


def test_read_by_stream_in_version_order(store: EventStore) -> None:
    a, b = new_stream(), new_stream()
    a_events, b_events = make_stream(a, 4), make_stream(b, 3)
    # Interleave the two streams across batches.
    store.append([a_events[0], b_events[0]])
    store.append([b_events[1], a_events[1], a_events[2]])
    store.append([b_events[2], a_events[3]])
    assert ids(store.read_stream(a)) == ids(a_events)
    assert ids(store.read_stream(b)) == ids(b_events)
    assert ids(store.read_stream(a, after_version=1)) == ids(a_events[2:])
    assert store.read_stream(new_stream()) == []
    assert store.stream_version(a) == 3
    assert store.stream_version(new_stream()) == -1
    assert ids(store.read(stream=b)) == ids(b_events)
    assert [r.id for r in store.read_records(stream=a, after=0, limit=2)] == ids(a_events[:2])


def test_read_by_position_pages_through_the_log(store: EventStore) -> None:
    events = [e for _ in range(5) for e in make_stream(new_stream(), 7)]
    for start in range(0, len(events), 7):
        store.append(events[start : start + 7])
    seen: list[uuid.UUID] = []
    after = 0
    while page := store.read_records(after=after, limit=4):
        assert len(page) <= 4
        seen.extend(r.id for r in page)
        after = page[-1].position
    assert seen == ids(events)
    assert after == store.max_position()
    assert store.read_records(after=store.max_position()) == []
    assert [r.id for r in store.iter_records(page=3)] == ids(events)
    middle = store.read_records(limit=20)[9].position
    assert [r.id for r in store.iter_records(after=middle, page=6)] == ids(events[10:])


def test_filtered_reads_by_stream_type_and_correlation(store: EventStore) -> None:
    a, b = new_stream(), new_stream()
    events = []
    for version in range(6):
        for stream, campaign in ((a, "campaign-a"), (b, "campaign-b")):
            finished = RunFinished(reason="done") if version == 5 else None
            events.append(make_event(stream, version, finished, correlation_id=campaign))
    store.append(events)
    by_campaign = store.iter_records(correlation="campaign-a", page=2)
    assert [(r.stream, r.version) for r in by_campaign] == [(a, v) for v in range(6)]
    finished = store.iter_records(types=["run.finished"], page=1)
    assert [r.stream for r in finished] == [a, b]
    assert (
        list(store.iter_records(stream=b, types=["run.finished"], correlation="campaign-a")) == []
    )
    tools = store.read_records(stream=b, types=["tool.invoked"], limit=3)
    assert [r.version for r in tools] == [0, 1, 2]


def test_last_record_of_a_stream(store: EventStore) -> None:
    a, b = new_stream(), new_stream()
    store.append(make_stream(a, 3))
    store.append(make_stream(b, 2))
    store.append(make_stream(a, 2, start=3))
    last = store.last_record(a)
    assert last is not None and last.version == 4
    assert store.last_record(new_stream()) is None
    assert store.stream_head(a) == (4, "tool.invoked")
    assert store.stream_head(new_stream()) is None


def test_stream_heads_of_several_streams(store: EventStore) -> None:
    a, b, empty = new_stream(), new_stream(), new_stream()
    store.append(make_stream(a, 3))
    store.append([*make_stream(b, 1), make_event(b, 1, RunFinished(reason="done"))])
    store.append(make_stream(a, 2, start=3))
    heads = store.stream_heads([b, empty, a, b])
    assert set(heads) == {a, b}
    assert (heads[a].version, heads[a].type) == (4, "tool.invoked")
    assert (heads[b].version, heads[b].type) == (1, "run.finished")
    last = store.last_record(a)
    assert last is not None and heads[a].recorded_at == last.recorded_at
    assert heads[a].recorded_at.tzinfo is not None
    assert store.stream_heads([]) == {}


def test_positions_strictly_increase_across_batches(store: EventStore) -> None:
    positions: list[int] = []
    for size in (1, 5, 2, 9, 1):
        result = store.append(make_stream(new_stream(), size))
        positions.extend(e.position for e in result.appended)
    assert positions == sorted(positions)
    assert len(set(positions)) == len(positions)
    assert [r.position for r in store.read_records(limit=100)] == positions
    assert store.max_position() == positions[-1]
    assert store.count() == len(positions)


def test_empty_log(store: EventStore) -> None:
    assert store.max_position() == 0
    assert store.count() == 0
    assert store.read_records() == []
    assert list(store.iter_records()) == []
    assert store.get(new_id()) is None


def test_get_and_read_round_trip_every_field(store: EventStore) -> None:
    cause = new_id()
    event = make_event(
        new_stream(),
        0,
        ExperimentScored(attempt=2, subtask_scores={"acc": 0.5, "f1": 0.25}, score=0.5),
        causation_id=cause,
        correlation_id="campaign-1",
        actor="lab-a",
    )
    [appended] = store.append([event]).appended
    got = store.get(event.id)
    assert got == appended
    assert got.causation_id == cause
    assert got.payload == event.payload
    assert got.schema_version == 1
    [record] = store.read_records()
    assert record.type == "experiment.scored"
    assert record.payload["subtask_scores"] == {"acc": 0.5, "f1": 0.25}
    assert (record.correlation_id, record.actor) == ("campaign-1", "lab-a")


def test_timestamps_come_back_aware_and_equal(store: EventStore) -> None:
    plus_two = timezone(timedelta(hours=2))
    occurred = [
        datetime(2025, 3, 1, 14, 0, 0, 654321, tzinfo=plus_two),
        datetime(2024, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
    ]
    stream = new_stream()
    batch = [
        make_event(stream, v).model_copy(update={"occurred_at": at})
        for v, at in enumerate(occurred)
    ]
    result = store.append(batch)
    for read in (store.read(), store.read_stream(stream), [store.get(e.id) for e in batch]):
        assert [e.occurred_at for e in read] == occurred
        for stored, appended in zip(read, result.appended, strict=True):
            assert stored.occurred_at.tzinfo is not None
            assert stored.recorded_at.tzinfo is not None
            assert stored.recorded_at == appended.recorded_at
    for record in store.read_records():
        assert record.occurred_at.utcoffset() is not None
        assert record.recorded_at.utcoffset() is not None
    assert abs(result.appended[0].recorded_at - datetime.now(UTC)) < timedelta(minutes=1)


def test_every_payload_type_round_trips(store: EventStore) -> None:
    stream = new_stream()
    payloads = [
        RunStarted(task="t", lab="lab-1", policy="simulated", seed=3),
        ToolInvoked(call_id="c1", tool="python", args={"script": "x.py", "n": [1, 2]}),
        RunFinished(reason="budget", detail="tokens"),
    ]
    batch = [make_event(stream, v, p) for v, p in enumerate(payloads)]
    store.append(batch)
    assert [e.payload for e in store.read_stream(stream)] == payloads


# -- blobs and dead letters ------------------------------------------------------


def test_blobs_round_trip(store: EventStore) -> None:
    data = bytes(range(256)) * 40
    key = hashlib.sha256(data).hexdigest()
    store.append([make_event(new_stream(), 0)], {key: data})
    assert store.get_blob(key) == data
    # Appending the same blob again (a redelivery) is harmless.
    store.append([], {key: data})
    assert store.get_blob(key) == data
    assert store.get_blob("0" * 64) is None


def test_blob_with_a_wrong_hash_is_refused(store: EventStore) -> None:
    event = make_event(new_stream(), 0)
    wrong = hashlib.sha256(b"something else").hexdigest()
    with pytest.raises(BlobMismatch, match=wrong):
        store.append([event], {wrong: b"the content"})
    assert store.get_blob(wrong) is None
    assert store.get(event.id) is None


def test_dead_letters_are_stored_and_listed_newest_first(store: EventStore) -> None:
    assert store.dead_letters() == []
    store.dead_letter("message is not JSON", "{nope")
    store.dead_letter("invalid event: payload.lab: missing", '{"id": 1}', "abc", "run-1")
    letters = store.dead_letters()
    assert [d.reason for d in letters] == [
        "invalid event: payload.lab: missing",
        "message is not JSON",
    ]
    newest, oldest = letters
    assert (newest.raw, newest.event_id, newest.stream) == ('{"id": 1}', "abc", "run-1")
    assert (oldest.raw, oldest.event_id, oldest.stream) == ("{nope", None, None)
    assert newest.id > oldest.id
    assert newest.received_at.tzinfo is not None
    assert abs(newest.received_at - datetime.now(UTC)) < timedelta(minutes=1)
    assert store.dead_letter_count() == 2
    assert len(store.dead_letters(limit=1)) == 1
    assert store.count() == 0


def test_schema_is_created_idempotently(store_url: str) -> None:
    first = EventStore.from_url(store_url)
    first.append(make_stream(new_stream(), 2))
    second = EventStore.from_url(store_url)
    assert second.count() == 2
    with second.engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM events")).scalar() == 2


# -- concurrency -----------------------------------------------------------------

WRITER = r"""
import os, random, sys, time
from datetime import UTC, datetime
from events import Event, EventStore
from events.ids import new_id
from events.payloads import ToolInvoked

url, writer, total, go = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
store = EventStore.from_url(url, create=False)
rng = random.Random(writer)
streams = [f"run-w{writer}-s{k}" for k in range(7)]
versions = dict.fromkeys(streams, 0)
print("ready", flush=True)
while not os.path.exists(go):
    time.sleep(0.002)
written = 0
met = False
while written < total:
    if not met and written >= total // 2:
        # Halfway, wait until the other writer has appended too: whichever writer went
        # first then has events both before and after the other's first, so the log
        # interleaves them however the scheduler ran the two processes.
        while store.count() <= written:
            time.sleep(0.002)
        met = True
    size = min(rng.choice([1, 2, 3, 5, 8, 13, 21, 60, 150]), total - written)
    batch = []
    for _ in range(size):
        stream = rng.choice(streams)
        batch.append(
            Event(
                id=new_id(),
                stream=stream,
                version=versions[stream],
                occurred_at=datetime.now(UTC),
                actor=f"writer-{writer}",
                payload=ToolInvoked(call_id=f"c{written}", tool="bash"),
            )
        )
        versions[stream] += 1
        written += 1
    result = store.append(batch)
    assert len(result.appended) == size, (len(result.appended), size)
"""


@pytest.mark.slow
def test_tailer_sees_every_event_once_in_order_while_two_processes_write(
    store_url: str, tmp_path
) -> None:
    per_writer = 3000
    store = EventStore.from_url(store_url)
    go = tmp_path / "go"
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, store_url, str(w), str(per_writer), str(go)],
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in (1, 2)
    ]
    try:
        for proc in writers:  # both are connected and waiting: start them together
            assert proc.stdout.readline().strip() == "ready", proc.stderr.read()
        go.touch()
        seen: list[Recorded] = []
        polls_with_news = 0
        deadline = time.monotonic() + 240
        while any(p.poll() is None for p in writers):
            assert time.monotonic() < deadline, "writers did not finish"
            page = store.read_records(after=seen[-1].position if seen else 0, limit=250)
            if page:
                polls_with_news += 1
                seen.extend(page)
            else:
                time.sleep(0.001)
        for proc in writers:
            _out, err = proc.communicate(timeout=30)
            assert proc.returncode == 0, err
        while page := store.read_records(after=seen[-1].position if seen else 0, limit=250):
            seen.extend(page)
    finally:
        for proc in writers:
            if proc.poll() is None:
                proc.kill()
                proc.wait()

    positions = [r.position for r in seen]
    assert all(a < b for a, b in zip(positions, positions[1:], strict=False))
    assert len({r.id for r in seen}) == len(seen) == 2 * per_writer
    # What the tailer saw is exactly the log: nothing committed behind its back.
    assert store.count() == 2 * per_writer
    assert [r.id for r in store.iter_records()] == [r.id for r in seen]
    # The tailer really tailed (many reads while the writers ran) ...
    assert polls_with_news > 10
    # ... and the writers' batches interleave (each waits for the other halfway).
    actors = [r.actor for r in seen]
    switches = sum(1 for a, b in zip(actors, actors[1:], strict=False) if a != b)
    assert switches >= 2
    for writer in (1, 2):
        mine = [r for r in seen if r.actor == f"writer-{writer}"]
        assert len(mine) == per_writer
        for k in range(7):
            versions = [r.version for r in mine if r.stream == f"run-w{writer}-s{k}"]
            assert versions == list(range(len(versions)))


# -- bounded memory --------------------------------------------------------------

BULK = 1_000_000
_BULK_TYPE = "CASE i % 3 WHEN 0 THEN 'run.finished' WHEN 1 THEN 'tool.invoked' "
_BULK_TYPE += "ELSE 'experiment.scored' END"
_BULK_PAYLOAD = """CASE i % 3
  WHEN 0 THEN jsonb_build_object('type', 'run.finished', 'reason', 'done', 'detail', 'n' || i)
  WHEN 1 THEN jsonb_build_object('type', 'tool.invoked', 'call_id', 'c' || i, 'tool', 'bash',
                                 'args', jsonb_build_object('n', i))
  ELSE jsonb_build_object('type', 'experiment.scored', 'attempt', 1, 'subtask_scores',
                          jsonb_build_object('acc', 0.5), 'score', 0.5) END"""
_BULK_COLUMNS = (
    "id, stream, version, type, schema_version, occurred_at, recorded_at, actor, payload"
)


def _bulk_insert(store: EventStore, count: int) -> None:
    """`count` valid events straight in with SQL: 1,000 streams of 1,000 versions."""
    with store.engine.begin() as conn:
        if conn.dialect.name == "postgresql":
            conn.execute(
                text(
                    f"INSERT INTO events ({_BULK_COLUMNS}) "
                    f"SELECT md5(i::text)::uuid, 'run-bulk' || (i / 1000), i % 1000, "
                    f"{_BULK_TYPE}, 1, "
                    f"timestamptz '2025-01-01 00:00:00+00' + i * interval '1 millisecond', "
                    f"now(), 'lab-bulk', {_BULK_PAYLOAD} "
                    f"FROM generate_series(0, {count - 1}) AS i"
                )
            )
        else:
            payload = _BULK_PAYLOAD.replace("jsonb_build_object", "json_object")
            conn.execute(
                text(
                    f"INSERT INTO events ({_BULK_COLUMNS}) "
                    f"WITH RECURSIVE seq(i) AS "
                    f"(SELECT 0 UNION ALL SELECT i + 1 FROM seq WHERE i < {count - 1}) "
                    f"SELECT printf('%032x', i), 'run-bulk' || (i / 1000), i % 1000, "
                    f"{_BULK_TYPE}, 1, '2025-01-01 00:00:00.000000', "
                    f"'2025-01-01 00:00:01.000000', 'lab-bulk', {payload} FROM seq"
                )
            )


def _status_mb(key: str) -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024
    raise AssertionError(f"{key} not in /proc/self/status")


@pytest.mark.slow
def test_iterating_a_million_events_keeps_memory_bounded(store_url: str) -> None:
    # tracemalloc would be the exact measure, but it makes this loop 6x slower; the
    # peak RSS (VmHWM, reset through clear_refs) is free. 100,000 records held in a
    # list take ~120 MB here, so the whole log held at once would be ~1.2 GB.
    store = EventStore.from_url(store_url)
    _bulk_insert(store, BULK)
    assert store.count() == BULK
    gc.collect()
    with open("/proc/self/clear_refs", "w") as clear:
        clear.write("5")  # resets VmHWM to the current RSS
    baseline = _status_mb("VmRSS")
    counted = 0
    last = 0
    types: set[str] = set()
    for record in store.iter_records():
        assert record.position > last
        last = record.position
        counted += 1
        if counted % 100_000 == 1:
            types.add(record.typed().type)  # the stored payloads are valid for their type
    growth = _status_mb("VmHWM") - baseline
    assert counted == BULK
    assert types == {"run.finished", "tool.invoked", "experiment.scored"}
    assert growth < 100, f"peak RSS grew by {growth:.0f} MB while iterating"
