"""Nothing on a queue can stop a worker.

Whatever lies on the `events` or `steps` list — bytes that are not JSON or not UTF-8,
JSON that is not a kombu message, a task message with a broken header or body, an
unknown task, a task with the wrong arguments, text with a lone surrogate, two events
with one id in a batch — ends in the dead-letter table with its reason and its raw
bytes (size-capped), and the worker goes on to record what comes after it.

Layers, each tested here at its own level and then all together through a real
worker process:
- the Redis channel (`workers/bus/gate.py`): an item kombu could not deliver is
  handed on as an "unreadable" message that carries the bytes and the reason;
- the Celery consumer (`workers/bus/consumer.py`): a message that is not a task this
  worker can run is sent to the recorder as a `labrxiv.dead_letter` task, then acked;
- the task (`workers/handlers.py`): arguments that do not fit the handler are
  dead-lettered through the worker's store;
- the recorder (`workers/recorder.py`): what is wrong inside a batch.
"""

import base64
import importlib.util
import json
import re
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import redis
from kombu import Connection, Exchange, Queue

from events import Event, EventStore
from events.wire import encode_batch
from tests.simulated import simulated_run
from workers.app import make_celery, register_tasks
from workers.bus.base import RECORD_TASK, publish
from workers.bus.celery import CeleryBus
from workers.bus.gate import REASON_HEADER, UNREADABLE
from workers.bus.memory import MemoryBus
from workers.bus.redis_transport import Transport
from workers.context import WorkerContext
from workers.handlers import run_handler
from workers.lab.step import LAB_STEP_TASK
from workers.recorder import RAW_LIMIT, record_message

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("worker_process", HERE / "worker_process.py")
assert _spec is not None and _spec.loader is not None
worker_process = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(worker_process)

START = datetime(2026, 1, 1, tzinfo=UTC)


DummyBus = MemoryBus
"""Collects what is sent (the recorder itself sends nothing but its reactions)."""


@pytest.fixture
def store(store_url: str) -> EventStore:
    return EventStore.from_url(store_url)


@pytest.fixture
def ctx(store: EventStore) -> WorkerContext:
    return WorkerContext(store=store, bus=DummyBus())


def run(name: str, attempts: int = 2) -> list[Event]:
    return list(simulated_run(name, START, attempts=attempts))


# -- the recorder: text with a lone surrogate, one id twice in a batch -------------------


@pytest.mark.parametrize(
    ("message", "reason"),
    [
        ('{"events": []}\ud800', "message is not valid Unicode text"),
        # How it arrives through Celery: the producer's JSON escapes it as \ud800 in the
        # task's body, and the worker's JSON decoder turns it back into a lone surrogate.
        (
            json.loads(json.dumps('{"events": [{"id": "x", "actor": "lab\udc00"}]}')),
            "message is not valid Unicode text",
        ),
        # Escaped inside the batch's own JSON text: the recorder's parser refuses it.
        ('{"events": [{"id": "x", "actor": "lab\\udc00"}]}', "message is not JSON"),
    ],
    ids=["outside-json", "inside-an-event", "escaped-in-the-batch"],
)
def test_text_with_a_lone_surrogate_is_dead_lettered(
    ctx: WorkerContext, store: EventStore, message: str, reason: str
) -> None:
    outcome = record_message(ctx, message)
    assert outcome.dead == 1 and outcome.appended == 0
    [letter] = store.dead_letters()
    assert letter.reason.startswith(reason), letter.reason
    assert "surrogate" in letter.reason
    # Kept visibly: neither database can store a lone surrogate.
    assert "\\ud800" in letter.raw or "\\udc00" in letter.raw


def test_a_second_event_with_the_same_id_in_a_batch_is_dead_lettered(
    ctx: WorkerContext, store: EventStore
) -> None:
    events = run("a")
    same = events[1]
    other = run("b")[0].model_copy(update={"id": same.id})  # same id, another event
    message = encode_batch([*events, same, other])
    outcome = record_message(ctx, message)
    assert (outcome.appended, outcome.dead) == (len(events), 2)
    assert [e.id for e in store.read_stream(events[0].stream)] == [e.id for e in events]
    assert store.read_stream(other.stream) == []
    letters = store.dead_letters()
    assert len(letters) == 2
    assert all(d.reason.startswith("duplicate id:") for d in letters), letters
    assert {d.event_id for d in letters} == {str(same.id)}
    assert {d.stream for d in letters} == {same.stream, other.stream}


# -- the task: wrong arguments, on either queue ------------------------------------------


@pytest.mark.parametrize(
    ("task", "args", "kwargs"),
    [
        (RECORD_TASK, [], {}),
        (RECORD_TASK, [123], {}),
        (RECORD_TASK, ["{}", "extra"], {}),
        (RECORD_TASK, [encode_batch([])], {"bogus": 1}),
        (RECORD_TASK, [encode_batch([])], {"later": "soon"}),
        (LAB_STEP_TASK, ["run-x"], {}),
        (LAB_STEP_TASK, [1, "run-x"], {}),
        (LAB_STEP_TASK, ["run-x", True], {}),
    ],
    ids=str,
)
def test_a_task_with_wrong_arguments_is_dead_lettered_not_dropped(
    ctx: WorkerContext, store: EventStore, task: str, args: list, kwargs: dict
) -> None:
    """Run as the Celery worker runs it (the registered task, eagerly): the task does
    not fail, it leaves a dead letter naming the task and what does not fit."""
    app = make_celery("memory://", visibility_timeout=60)
    register_tasks(app, lambda: ctx)
    result = app.tasks[task].apply(args=args, kwargs=kwargs)
    assert result.successful(), result.traceback
    [letter] = store.dead_letters()
    assert task in letter.reason and "arguments" in letter.reason, letter.reason
    queue = "events" if task == RECORD_TASK else "steps"
    assert letter.reason.startswith(f"{queue} queue:"), letter.reason
    assert json.loads(letter.raw) == {"args": args, "kwargs": kwargs}
    assert store.count() == 0


def test_the_local_bus_runs_the_same_argument_check(ctx: WorkerContext, store: EventStore):
    run_handler(ctx, RECORD_TASK, (123,))
    [letter] = store.dead_letters()
    assert letter.reason.startswith("events queue: labrxiv.record: wrong arguments")


# -- the Redis channel: items kombu cannot deliver ---------------------------------------

GOOD_PROPERTIES = {
    "delivery_tag": "t-1",
    "body_encoding": "base64",
    "delivery_info": {"exchange": "", "routing_key": "garbage-test"},
    "priority": 0,
}


def kombu_item(**change: Any) -> bytes:
    item: dict[str, Any] = {
        "body": base64.b64encode(b'{"n": 1}').decode(),
        "content-type": "application/json",
        "content-encoding": "utf-8",
        "headers": {},
        "properties": dict(GOOD_PROPERTIES),
    }
    item.update(change)
    return json.dumps(item).encode()


UNREADABLE_ITEMS = {
    "not-json": (b"{this is not json", "not JSON"),
    "not-utf8": (b"\xff\xfe\x00garbage", "not UTF-8"),
    "utf8-inside-json": (b'{"body": "\xff", "properties": {}}', "not UTF-8"),
    "json-list": (b"[1, 2]", "not a kombu message"),
    "json-null": (b"null", "not a kombu message"),
    "no-properties": (b'{"body": "eA=="}', "not a kombu message"),
    "no-delivery-tag": (kombu_item(properties={"body_encoding": "base64"}), "not a kombu message"),
    "bad-base64": (kombu_item(body="!!!x"), "not a kombu message"),
    "headers-a-list": (kombu_item(headers=[1, 2]), "not a kombu message"),
    "kombu-type-marker": (
        kombu_item(headers={"x": {"__type__": "datetime", "__value__": "no"}}),
        "not JSON",
    ),
    "deep": (b"[" * 5000 + b"]" * 5000, "not JSON"),
}


@pytest.fixture
def channel(redis_url: str) -> Iterator[Any]:
    with Connection(redis_url, transport=Transport) as connection:
        channel = connection.channel()
        Queue("garbage-test", Exchange("garbage-test"), "garbage-test")(channel).declare()
        yield channel


@pytest.mark.parametrize("name", list(UNREADABLE_ITEMS))
@pytest.mark.parametrize("how", ["get", "consume"])
def test_an_item_kombu_cannot_read_comes_out_as_an_unreadable_message(
    redis_url: str, channel: Any, name: str, how: str
) -> None:
    """Taken by RPOP (`get`) or by BRPOP (a consumer, as a worker takes it): today
    kombu raises while parsing it, which stops a Celery worker."""
    item, reason = UNREADABLE_ITEMS[name]
    client = redis.Redis.from_url(redis_url)
    queue = Queue("garbage-test", Exchange("garbage-test"), "garbage-test")
    client.lpush("garbage-test", item)
    client.lpush("garbage-test", kombu_item())  # a good one after it (BRPOP takes the right end)
    got: list[Any] = []
    if how == "get":
        got = [queue(channel).get(no_ack=False), queue(channel).get(no_ack=False)]
    else:
        # `on_message`: the consumer hands over messages undecoded, as Celery's does.
        with channel.connection.client.Consumer(queue, on_message=got.append, accept=["json"]):
            for _ in range(2):
                channel.connection.client.drain_events(timeout=5)
    unreadable, good = got
    assert unreadable.content_type == UNREADABLE
    assert unreadable.headers[REASON_HEADER].startswith(reason), unreadable.headers
    assert unreadable.body == item
    assert good.content_type == "application/json" and json.loads(good.body) == {"n": 1}
    unreadable.ack()
    good.ack()
    assert client.hlen("unacked") == 0 and client.llen("garbage-test") == 0


def test_an_unreadable_message_left_unacked_comes_back_unreadable(
    redis_url: str, channel: Any
) -> None:
    """The wrapper is a well-formed message: restored after a worker dies, it is the
    same unreadable message again, with the original bytes."""
    client = redis.Redis.from_url(redis_url)
    queue = Queue("garbage-test", Exchange("garbage-test"), "garbage-test")
    client.lpush("garbage-test", b"\xffgarbage")
    first = queue(channel).get(no_ack=False)
    assert first is not None and client.hlen("unacked") == 1
    channel.qos.restore_unacked_once()
    assert client.hlen("unacked") == 0 and client.llen("garbage-test") == 1
    again = queue(channel).get(no_ack=True)
    assert again.content_type == UNREADABLE and again.body == b"\xffgarbage"


def test_a_huge_unreadable_item_is_cut_to_the_raw_limit(redis_url: str, channel: Any) -> None:
    client = redis.Redis.from_url(redis_url)
    item = b"\xff" + b"x" * (RAW_LIMIT * 4)
    client.lpush("garbage-test", item)
    message = Queue("garbage-test", Exchange("garbage-test"), "garbage-test")(channel).get(
        no_ack=True
    )
    assert message.body == item[:RAW_LIMIT]
    assert f"{len(item)} bytes" in message.headers[REASON_HEADER]


# -- all together: a real worker process ------------------------------------------------


def envelope(queue: str, name: str, args: Any, body: bytes | None = None, **headers: Any) -> bytes:
    """A Celery protocol-2 message of task `name` as kombu's Redis transport stores it on
    `queue`; `headers` replace the usual ones (None: left out)."""
    task_id = str(uuid.uuid4())
    if body is None:
        body = json.dumps([args, {}, {"callbacks": None, "errbacks": None}]).encode()
    head = {"lang": "py", "task": name, "id": task_id, "root_id": task_id, "retries": 0}
    head.update(headers)
    return kombu_item(
        body=base64.b64encode(body).decode(),
        headers={k: v for k, v in head.items() if v is not None},
        properties={
            **GOOD_PROPERTIES,
            "delivery_tag": task_id,
            "delivery_info": {"exchange": "", "routing_key": queue},
        },
    )


# (queue, raw item, a pattern its dead letter's reason must match from the start)
CATALOGUE: list[tuple[str, bytes, str]] = [
    ("events", b"\x00\xffnot json and not utf-8", r"events queue: not UTF-8"),
    ("events", b"{this is not json", r"events queue: not JSON"),
    ("steps", b"{this is not json either", r"steps queue: not JSON"),
    ("events", b'{"properties": []}', r"events queue: not a kombu message"),
    ("events", envelope("events", RECORD_TASK, []), r"events queue: .*wrong arguments"),
    ("events", envelope("events", RECORD_TASK, [123]), r"events queue: .*wrong arguments"),
    ("steps", envelope("steps", LAB_STEP_TASK, ["run-x"]), r"steps queue: .*wrong arguments"),
    ("events", envelope("events", "labrxiv.nope", ["x"]), r"events queue: unknown task"),
    ("steps", envelope("steps", LAB_STEP_TASK, ["run-x", 0], id=None), r"steps .*header: id"),
    ("steps", envelope("steps", LAB_STEP_TASK, ["run-x", 0], task=None), r"steps .*no 'task'"),
    ("events", envelope("events", RECORD_TASK, "not a list"), r"events .*args are not a list"),
    ("events", envelope("events", RECORD_TASK, ["{}"], eta=5), r"events .*header: eta"),
    ("events", envelope("events", RECORD_TASK, ["{}"], timelimit="x"), r"events .*timelimit"),
    ("events", envelope("events", RECORD_TASK, None, body=b"\xff["), r"events .*cannot be decoded"),
    ("events", envelope("events", RECORD_TASK, None, body=b"[1, 2]"), r"events .*not \[args"),
    # Past the consumer and the task: the recorder's own dead letter.
    ("events", envelope("events", RECORD_TASK, ['{"events": []}\ud800']), r"message is not valid"),
]


@pytest.mark.redis
@pytest.mark.slow
def test_garbage_on_either_queue_is_dead_lettered_and_the_worker_goes_on(
    sqlite_url: str, redis_url: str, tmp_path: Path
) -> None:
    """Each item of the catalogue is pushed raw onto its list, between good batches: the
    worker process stays up, every good event is recorded once, and every bad item is
    in the dead-letter table once, with its reason."""
    store = EventStore.from_url(sqlite_url)
    client = redis.Redis.from_url(redis_url)
    env = worker_process.environment(redis_url, sqlite_url, tmp_path)
    worker = worker_process.WorkerProcess(env, tmp_path / "worker.log").start()
    app = make_celery(redis_url, visibility_timeout=4)
    bus = CeleryBus(app)
    try:
        good: list[Event] = []
        for index, (queue, item, _reason) in enumerate(CATALOGUE):
            events = run(f"g{index}", attempts=1)
            good += events
            client.lpush(queue, item)
            publish(bus, events)
        worker_process.wait_for(
            "every good event recorded and every bad item dead-lettered",
            lambda: store.count() >= len(good) and store.dead_letter_count() >= len(CATALOGUE),
            worker,
        )
        worker_process.wait_for(
            "the queues drained",
            lambda: client.llen("events") + client.llen("steps") + client.hlen("unacked") == 0,
            worker,
        )
        assert worker.alive()
        assert sorted(r.id for r in store.iter_records()) == sorted(e.id for e in good)
        letters = store.dead_letters(limit=1000)
        assert len(letters) == len(CATALOGUE), [d.reason for d in letters]
        unmatched = [d.reason for d in letters]
        for queue, _item, pattern in CATALOGUE:
            match = next((r for r in unmatched if re.match(pattern, r)), None)
            assert match is not None, f"no dead letter on {queue} matching {pattern!r}: {unmatched}"
            unmatched.remove(match)
        # The raw bytes are kept, readable: a byte that is not UTF-8 as \xff, NUL as \x00.
        [raw] = [d.raw for d in letters if d.reason.startswith("events queue: not UTF-8")]
        assert raw == "\\x00\\xffnot json and not utf-8"
        assert "Unrecoverable error" not in worker.text()
    finally:
        worker.kill()
