"""Fuzz: generated messages into the recorder's worker, at least 10,000 a run.

Property-based (hypothesis), in two parts.

In process, most of the volume:
- text and JSON of any shape as the recorder's message (`record_message`);
- event batches: events generated from the envelope's own JSON schema (every payload
  type), one field of some of them mutated (removed, retyped, out of range, huge,
  NUL, an extra key), the same id sent twice, bad blobs, and well-formed simulated
  runs mixed in;
- argument lists of any shape into every registered task, run as the worker runs it;
- bytes and mutated envelopes into the Redis channel's gate and the consumer's check.
Properties: nothing raises; every item of a message is recorded (once, reading back
as it was sent) or dead-lettered with a reason, one row each; a message refused
whole is one dead letter; the simulated runs are recorded whole.

Through Redis and a real worker process: generated garbage pushed raw onto the
`events` and `steps` lists between good batches. Properties: the worker process never
exits, every garbage item is one dead letter with a reason, and every good batch
after it is recorded, once.

`MESSAGES` says how many each part generates; `test_the_runs_volume` checks that the
parts add up to at least 10,000 and each test checks that it generated its share.
"""

import base64
import hashlib
import importlib.util
import json
import os
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kombu import Connection
from kombu.transport.virtual import Message
from kombu.utils.json import loads as kombu_loads

from events import Event, EventStore
from events.ids import new_id
from events.upgrade import upgrade
from tests.simulated import simulated_run
from workers.app import make_celery, register_tasks
from workers.bus.base import RECORD_TASK, publish
from workers.bus.celery import CeleryBus
from workers.bus.consumer import task_message_problem
from workers.bus.dead_letters import DEAD_LETTER_TASK, RAW_LIMIT
from workers.bus.gate import REASON_HEADER, UNREADABLE, admit
from workers.bus.memory import MemoryBus
from workers.context import WorkerContext
from workers.lab.step import LAB_STEP_TASK
from workers.recorder import record_message

pytestmark = pytest.mark.slow

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("worker_process", HERE / "worker_process.py")
assert _spec is not None and _spec.loader is not None
worker_process = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(worker_process)

MESSAGES = {
    "text": 3000,
    "batches-sqlite": 2000,
    "batches-postgres": 400,
    "arguments": 1000,
    "gate": 5000,
    "end-to-end": 3 * 40,
}
"""Messages generated per run, by part (hypothesis runs exactly this many examples
unless a property fails)."""
SCALE = float(os.environ.get("LABRXIV_FUZZ_SCALE", "1"))
"""A developer's knob: `LABRXIV_FUZZ_SCALE=0.1` for a quick look. CI runs the full count."""


def share(part: str) -> int:
    """How many messages `part` generates in this run."""
    return max(1, int(MESSAGES[part] * SCALE))


START = datetime(2026, 1, 1, tzinfo=UTC)


def fuzz(examples: int) -> Callable[[Any], Any]:
    """Hypothesis settings for a part: `examples` fresh examples a run, no time limit
    per example (a database write is slow next to generating one)."""
    return settings(
        max_examples=examples,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )


DummyBus = MemoryBus
"""Collects what is sent (the recorder itself sends nothing but its reactions)."""


# -- strategies ---------------------------------------------------------------------------

BOUNDARY_INTS = st.sampled_from(
    [-1, 0, 2**31 - 1, 2**31, 2**53 + 1, 2**63 - 1, 2**63, 2**64, -(2**63) - 1, 10**40]
)
SHORT_TEXT = st.text(max_size=12)
LONG_TEXT = st.builds(  # no lone surrogate: the text test sends those (whole messages refused)
    lambda c, n: c * n, st.characters(exclude_categories=("Cs",)), st.integers(150, 300)
)
ANY_TEXT = st.one_of(SHORT_TEXT, SHORT_TEXT.map(lambda t: t + "\x00"), LONG_TEXT)
NUMBERS = st.one_of(st.integers(), BOUNDARY_INTS, st.floats(allow_nan=False, allow_infinity=False))
SCALARS = st.one_of(st.none(), st.booleans(), NUMBERS, ANY_TEXT)
JSON: st.SearchStrategy[Any] = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(SHORT_TEXT, inner, max_size=4),
    max_leaves=12,
)
ZONES = st.sampled_from([UTC, timezone(timedelta(hours=14)), timezone(timedelta(hours=-12))])
MOMENTS = st.one_of(
    st.datetimes(timezones=ZONES).map(datetime.isoformat),
    st.datetimes().map(datetime.isoformat),  # naive: refused
    ANY_TEXT,
)


def from_schema(schema: dict[str, Any], defs: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Values a JSON schema (as pydantic writes one) describes, mostly valid: bounds
    are kept, but numbers are unbounded above and strings may hold NUL."""
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[1]
        return st.deferred(lambda: from_schema(defs[name], defs))
    if "const" in schema:
        return st.just(schema["const"])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    for key in ("oneOf", "anyOf"):
        if key in schema:
            return st.one_of([from_schema(option, defs) for option in schema[key]])
    kind = schema.get("type")
    if kind == "string":
        return _strings(schema)
    if kind == "integer":
        low = schema.get("minimum", schema.get("exclusiveMinimum", -(2**70) - 1) + 1)
        return st.one_of(
            st.integers(low, schema.get("maximum")), BOUNDARY_INTS.filter(lambda n: n >= low)
        )
    if kind == "number":
        low, high = schema.get("minimum"), schema.get("maximum")
        floats = st.floats(low, high, allow_nan=False, allow_infinity=False)
        return st.one_of(
            floats,
            st.integers(None if low is None else int(low), None if high is None else int(high)),
        )
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    if kind == "array":
        low = schema.get("minItems", 0)
        return st.lists(
            from_schema(schema.get("items", {}), defs),
            min_size=low,
            max_size=max(low, min(schema.get("maxItems", 3), 3)),
        )
    if kind == "object":
        return _objects(schema, defs)
    return JSON  # `{}`: any JSON value (pydantic's JsonValue)


def _strings(schema: dict[str, Any]) -> st.SearchStrategy[str]:
    fmt = schema.get("format")
    if fmt == "uuid":
        return st.uuids().map(str)
    if fmt == "date-time":
        return MOMENTS
    if "pattern" in schema:
        return st.from_regex(schema["pattern"], fullmatch=True)
    low, high = schema.get("minLength", 0), schema.get("maxLength")
    text = st.text(min_size=low, max_size=max(low, 12))
    if high is not None and 12 < high <= 5000:  # around the limit (longer ones: too slow)
        text = text | st.text(min_size=high - 2, max_size=high + 2, alphabet="xé\x00")
    return text


def _objects(schema: dict[str, Any], defs: dict[str, Any]) -> st.SearchStrategy[Any]:
    properties = schema.get("properties", {})
    required = set(schema.get("required", ()))
    extra = schema.get("additionalProperties")
    if not properties and isinstance(extra, dict):
        return st.dictionaries(SHORT_TEXT, from_schema(extra, defs), max_size=3)
    return st.fixed_dictionaries(
        {name: from_schema(sub, defs) for name, sub in properties.items() if name in required},
        optional={
            name: from_schema(sub, defs) for name, sub in properties.items() if name not in required
        },
    )


EVENT_SCHEMA = Event.model_json_schema()
_ENVELOPE = EVENT_SCHEMA["properties"]
EVENT_DICTS = st.fixed_dictionaries(
    # id, stream and version are the caller's: fresh, so that what is valid is recorded.
    {
        "occurred_at": MOMENTS,
        "payload": from_schema(_ENVELOPE["payload"], EVENT_SCHEMA["$defs"]),
    },
    optional={
        name: from_schema(_ENVELOPE[name], EVENT_SCHEMA["$defs"])
        for name in ("causation_id", "correlation_id", "actor", "schema_version")
    },
)


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every path to a value inside `value` (dict keys and list indices)."""
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from paths(item, (*prefix, index))


MUTATIONS = st.tuples(
    st.integers(min_value=0),
    st.sampled_from(["replace", "delete", "add"]),
    st.one_of(SCALARS, JSON, st.sampled_from(["NaN", "Infinity", "-inf", "1e999"])),
)


def mutate(item: dict[str, Any], how: tuple[int, str, Any]) -> dict[str, Any]:
    """`item` with one change at a path `how` picks: the value replaced, deleted, or a key
    added beside it."""
    index, kind, value = how
    item = json.loads(json.dumps(item))
    candidates = [p for p in paths(item) if p]
    if not candidates:
        return item
    path = candidates[index % len(candidates)]
    parent: Any = item
    for step in path[:-1]:
        parent = parent[step]
    last = path[-1]
    if kind == "replace":
        parent[last] = value
    elif kind == "delete":
        del parent[last]
    elif isinstance(parent, dict):
        parent[f"extra_{index % 7}"] = value
    else:
        parent.insert(last, value)
    return item


@st.composite
def batches(draw: st.DrawFn) -> tuple[dict[str, Any], list[dict[str, Any]], list[Event]]:
    """(message body, its items, the simulated runs' events in it)."""
    runs = [
        list(simulated_run(f"fz{uuid.uuid4().hex}", START, attempts=draw(st.integers(1, 2))))
        for _ in range(draw(st.integers(0, 2)))
    ]
    others: list[Any] = []
    for _ in range(draw(st.integers(0, 5))):
        choice = draw(st.integers(0, 9))
        if choice == 0:
            others.append(draw(JSON))  # not an event at all
            continue
        item = {"id": str(new_id()), "stream": f"fz-{uuid.uuid4().hex}", "version": 0}
        item.update(draw(EVENT_DICTS))
        if choice <= 6:  # most events get one field changed
            item = mutate(item, draw(MUTATIONS))
        others.append(item)
    good = [event for run in runs for event in run]
    items: list[Any] = [e.model_dump(mode="json") for e in good]
    for other in others:  # in anywhere, each run's own order kept
        items.insert(draw(st.integers(0, len(items))), other)
    if good and draw(st.booleans()):
        twin = draw(st.sampled_from(good)).model_dump(mode="json")
        if draw(st.booleans()):
            twin["actor"] = "someone-else"  # same id, another event
        items.append(twin)
    body: dict[str, Any] = {"events": items}
    if draw(st.integers(0, 9)) == 0:
        body["blobs"] = draw(st.one_of(JSON, st.just({"abc": "AAAA"}), valid_blobs()))
    return body, items, good


def valid_blobs() -> st.SearchStrategy[dict[str, str]]:
    return st.binary(max_size=64).map(
        lambda data: {hashlib.sha256(data).hexdigest(): base64.b64encode(data).decode()}
    )


# -- in process: the recorder's handler -----------------------------------------------------


def letters_after(store: EventStore, last: int, most: int) -> list[Any]:
    """The dead letters written after the one with id `last` (read newest first by the
    primary key: counting rows would scan a table that grows all run)."""
    return [d for d in store.dead_letters(limit=most + 1) if d.id > last]


def last_letter(store: EventStore) -> int:
    newest = store.dead_letters(limit=1)
    return newest[0].id if newest else 0


@pytest.fixture
def quick_sqlite_url(tmp_path: Path) -> Iterator[str]:
    """A SQLite log on tmpfs where there is one: thousands of appends and dead letters,
    each a commit, measure the disk's fsync otherwise, not the recorder."""
    shm = Path("/dev/shm")
    if not (shm.is_dir() and os.access(shm, os.W_OK)):
        yield f"sqlite:///{tmp_path / 'log.db'}"
        return
    folder = Path(tempfile.mkdtemp(prefix="labrxiv-fuzz-", dir=shm))
    try:
        yield f"sqlite:///{folder / 'log.db'}"
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def fuzz_ctx(quick_sqlite_url: str) -> WorkerContext:
    return WorkerContext(store=EventStore.from_url(quick_sqlite_url), bus=DummyBus())


def test_any_text_is_recorded_or_dead_lettered(fuzz_ctx: WorkerContext) -> None:
    """Text, JSON of any shape, and JSON that is almost a batch: the recorder never raises;
    a message that is not a batch is one dead letter; what it records is what it says."""
    store = fuzz_ctx.store
    seen = {"n": 0}
    texts = st.one_of(
        st.text(st.characters(exclude_categories=())),  # lone surrogates too
        JSON.map(lambda v: json.dumps(v, ensure_ascii=False)),
        st.lists(JSON, max_size=4).map(lambda items: json.dumps({"events": items})),
        st.binary().map(lambda b: b.decode("latin-1")),
    )

    @fuzz(share("text"))
    @given(texts)
    def check(message: str) -> None:
        seen["n"] += 1
        last, dead = store.max_position(), last_letter(store)
        outcome = record_message(fuzz_ctx, message)
        assert len(store.read_records(after=last, limit=10_000)) == outcome.appended
        letters = letters_after(store, dead, outcome.dead)
        assert len(letters) == outcome.dead and all(d.reason for d in letters)
        if outcome.appended == 0 and outcome.skipped == 0:
            assert outcome.dead >= 1 or _is_empty_batch(message)

    check()
    assert seen["n"] >= share("text")


def _is_empty_batch(message: str) -> bool:
    try:
        body = json.loads(message)
    except ValueError:
        return False
    return isinstance(body, dict) and body.get("events") == [] and not body.get("blobs")


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_generated_batches_are_recorded_or_dead_lettered_item_by_item(
    backend: str, request: pytest.FixtureRequest
) -> None:
    """Every item is recorded or dead-lettered (one row each, with a reason); each
    recorded event reads back as it was sent; the simulated runs are recorded whole; a
    message with bad blobs is one dead letter."""
    url = request.getfixturevalue("quick_sqlite_url" if backend == "sqlite" else "pg_url")
    store = EventStore.from_url(url)
    ctx = WorkerContext(store=store, bus=DummyBus())
    seen = {"n": 0}

    @fuzz(share(f"batches-{backend}"))
    @given(batches())
    def check(generated: tuple[dict[str, Any], list[Any], list[Event]]) -> None:
        body, items, good = generated
        seen["n"] += 1
        last, dead = store.max_position(), last_letter(store)
        outcome = record_message(ctx, json.dumps(body, ensure_ascii=False))
        # What the message added, read back (and validated, as every reader does).
        recorded = {r.id: r.typed() for r in store.read_records(after=last, limit=10_000)}
        assert len(recorded) == outcome.appended and outcome.skipped == 0  # fresh ids
        letters = letters_after(store, dead, outcome.dead)
        assert len(letters) == outcome.dead and all(letter.reason for letter in letters)
        if outcome.dead == 1 and not letters[0].reason.startswith(ITEM_REASONS):
            assert outcome.appended == 0 and "blobs" in body, letters[0].reason
            return  # refused whole, for its blobs
        assert outcome.appended + outcome.dead == len(items), (outcome, len(items))
        for event in good:
            assert _same(recorded.get(event.id), event), f"simulated event {event.id} missing"
        firsts: dict[uuid.UUID, Any] = {}
        for item in items:  # the first of each id is the one recorded, if any
            key = item.get("id") if isinstance(item, dict) else None
            if key is not None and _uuid(key) in recorded:
                firsts.setdefault(_uuid(key), item)
        assert len(firsts) == len(recorded)  # nothing recorded that was not sent
        for key, item in firsts.items():
            assert _same(recorded[key], Event.model_validate(upgrade(item))), (item, recorded[key])

    check()
    assert seen["n"] >= share(f"batches-{backend}")


def _same(stored: Event | None, sent: Event) -> bool:
    if stored is None:
        return False
    skip = {"position", "recorded_at"}
    return stored.model_dump(exclude=skip) == sent.model_dump(exclude=skip)


ITEM_REASONS = ("invalid event:", "duplicate id:", "version conflict:")
"""How the reason of a dead letter for one event of a message begins."""


def _uuid(value: Any) -> uuid.UUID | None:
    try:
        return uuid.UUID(str(value))
    except ValueError:
        return None


# -- in process: task arguments, as the worker runs them ------------------------------------


def test_any_arguments_to_any_task_are_run_or_dead_lettered(fuzz_ctx: WorkerContext) -> None:
    """Every registered task, run as the worker runs it (eagerly, through the same task
    function), with argument lists of any shape: the task never fails; arguments that do
    not fit are one dead letter naming the task."""
    store = fuzz_ctx.store
    app = make_celery("memory://", visibility_timeout=60)
    register_tasks(app, lambda: fuzz_ctx)
    seen = {"n": 0}
    argument_lists = st.lists(
        st.one_of(JSON, st.just("run-x"), st.just(encode_empty())), max_size=4
    )
    keywords = st.one_of(
        st.just({}), st.dictionaries(st.sampled_from(["later", "x"]), JSON, max_size=2)
    )

    @fuzz(share("arguments"))
    @given(
        st.sampled_from([RECORD_TASK, LAB_STEP_TASK, DEAD_LETTER_TASK]), argument_lists, keywords
    )
    def check(task: str, args: list[Any], kwargs: dict[str, Any]) -> None:
        seen["n"] += 1
        dead = last_letter(store)
        result = app.tasks[task].apply(args=args, kwargs=kwargs)
        assert result.successful(), result.traceback
        assert all(d.reason for d in letters_after(store, dead, 10))

    check()
    assert seen["n"] >= share("arguments")


def encode_empty() -> str:
    return json.dumps({"events": []})


# -- in process: the Redis channel's gate and the consumer's check --------------------------


def envelopes() -> st.SearchStrategy[bytes]:
    """kombu envelopes of Celery task messages, one part of some of them mutated."""
    app = make_celery("memory://", visibility_timeout=60)

    def build(task: str, args: list[Any], how: tuple[int, str, Any] | None) -> bytes:
        message = app.amqp.as_task_v2(str(uuid.uuid4()), task, args=args, kwargs={})
        body = json.dumps(message.body).encode()
        envelope = {
            "body": base64.b64encode(body).decode(),
            "content-type": "application/json",
            "content-encoding": "utf-8",
            "headers": message.headers,
            "properties": {
                **message.properties,
                "delivery_tag": str(uuid.uuid4()),
                "body_encoding": "base64",
                "delivery_info": {"exchange": "", "routing_key": "events"},
                "priority": 0,
            },
        }
        if how is not None:
            envelope = mutate(envelope, how)
        return json.dumps(envelope).encode()

    return st.builds(
        build,
        st.sampled_from([RECORD_TASK, LAB_STEP_TASK, "labrxiv.nope"]),
        st.lists(JSON, max_size=2),
        st.none() | MUTATIONS,
    )


def test_any_item_off_a_list_is_delivered_or_comes_out_unreadable() -> None:
    """Whatever the bytes, the gate hands kombu something it can deliver: the item
    itself, or an unreadable message carrying its first bytes and a reason. The
    consumer's check then never raises on it."""
    channel = Connection("memory://").default_channel
    seen = {"n": 0}
    items = st.one_of(
        st.binary(max_size=200),
        JSON.map(lambda v: json.dumps(v).encode()),
        envelopes(),
    )

    @fuzz(max(1, share("gate") // 5))
    @given(st.lists(items, min_size=5, max_size=5))
    def check(five: list[bytes]) -> None:
        for item in five:
            seen["n"] += 1
            one(item)

    def one(item: bytes) -> None:
        admitted = admit(item, "events")
        payload = kombu_loads(admitted.decode())  # as kombu parses it
        message = Message(payload, channel=channel)  # as kombu's channel reads it
        info = message.delivery_info
        assert isinstance(info["exchange"], str) and isinstance(info["routing_key"], str)
        if admitted is not item:
            assert message.content_type == UNREADABLE
            assert message.headers[REASON_HEADER]
            assert message.body == item[:RAW_LIMIT]
        problem = task_message_problem(message)
        assert problem is None or problem

    check()
    assert seen["n"] >= share("gate") // 5 * 5


# -- through Redis and a real worker process ------------------------------------------------


def garbage() -> st.SearchStrategy[tuple[str, bytes]]:
    """(queue, item): things that each end as exactly one dead letter."""
    wrong_args = st.builds(
        lambda queue, task, args: (queue, _envelope(queue, task, args)),
        st.sampled_from(["events", "steps"]),
        st.sampled_from([RECORD_TASK, LAB_STEP_TASK, "labrxiv.nope"]),
        st.lists(st.integers(), max_size=3),  # never fits: a record takes text, a step two
    )
    raw = st.builds(
        lambda queue, item: (queue, item),
        st.sampled_from(["events", "steps"]),
        st.one_of(
            st.binary(min_size=1, max_size=100).filter(lambda b: not b.startswith(b"{")),
            JSON.map(lambda v: json.dumps(v).encode()).filter(lambda b: not b.startswith(b"{")),
        ),
    )
    return st.one_of(raw, wrong_args)


def _envelope(queue: str, task: str, args: list[Any]) -> bytes:
    task_id = str(uuid.uuid4())
    body = json.dumps([args, {}, {"callbacks": None, "errbacks": None}]).encode()
    return json.dumps(
        {
            "body": base64.b64encode(body).decode(),
            "content-type": "application/json",
            "content-encoding": "utf-8",
            "headers": {"lang": "py", "task": task, "id": task_id, "root_id": task_id},
            "properties": {
                "delivery_tag": task_id,
                "body_encoding": "base64",
                "delivery_info": {"exchange": "", "routing_key": queue},
                "priority": 0,
            },
        }
    ).encode()


@pytest.mark.redis
def test_garbage_pushed_raw_never_stops_a_real_worker(
    sqlite_url: str, redis_url: str, tmp_path: Path
) -> None:
    """Rounds of generated garbage, each item pushed raw onto the `events` or `steps`
    list before a good batch: after each round the same worker process is up, the
    round's garbage is that many dead letters, and the good batches are recorded once."""
    store = EventStore.from_url(sqlite_url)
    client = redis.Redis.from_url(redis_url)
    env = worker_process.environment(redis_url, sqlite_url, tmp_path)
    worker = worker_process.WorkerProcess(env, tmp_path / "worker.log").start()
    assert worker.proc is not None
    pid = worker.proc.pid
    bus = CeleryBus(make_celery(redis_url, visibility_timeout=4))
    rounds = {"n": 0, "items": 0}
    good: list[Event] = []

    @fuzz(max(1, share("end-to-end") // 40))
    @given(st.lists(garbage(), min_size=40, max_size=40))
    def check(round_: list[tuple[str, bytes]]) -> None:
        rounds["n"] += 1
        dead = store.dead_letter_count()
        for index, (queue, item) in enumerate(round_):
            client.lpush(queue, item)
            if index % 10 == 9:
                events = list(simulated_run(f"e2e{uuid.uuid4().hex}", START, attempts=1))
                publish(bus, events)
                good.extend(events)
        rounds["items"] += len(round_)
        worker_process.wait_for(
            "the round's garbage dead-lettered and its good batches recorded",
            lambda: store.dead_letter_count() >= dead + len(round_) and store.count() >= len(good),
            worker,
        )
        worker_process.wait_for(
            "the queues drained",
            lambda: client.llen("events") + client.llen("steps") + client.hlen("unacked") == 0,
            worker,
        )
        assert worker.alive() and worker.proc is not None and worker.proc.pid == pid
        assert store.dead_letter_count() == dead + len(round_)
        letters = store.dead_letters(limit=len(round_))
        assert all(letter.reason for letter in letters)
        assert not [d.reason for d in letters if "the handler raised" in d.reason]

    try:
        check()
        assert sorted(r.id for r in store.iter_records()) == sorted(e.id for e in good)
        assert rounds["items"] >= share("end-to-end") // 40 * 40
        log = worker.text()
        assert "Unrecoverable error" not in log and "WorkerLostError" not in log
    finally:
        worker.kill()


def test_the_runs_volume() -> None:
    """The parts generate at least 10,000 messages a run between them."""
    assert sum(MESSAGES.values()) >= 10_000
