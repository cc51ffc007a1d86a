"""Delivery through the real Redis to separate worker processes.

Every test here runs `labrxiv worker` as a subprocess (its own session, so a kill
takes its pool children with it) and publishes from another subprocess
(publish_simulated.py), then reads the log the worker wrote. What they show:
- every published event is in the log exactly once, each stream's versions 0..n;
- a worker SIGKILLed in the middle of a task loses nothing: the unacked message comes
  back (after the visibility timeout when the whole worker died; at once, at the back of
  the queue, when only a prefork child died) and the redelivery is a no-op for what was
  already stored;
- a stream split over messages that arrive later part first (as redelivery can reorder
  them) is recorded whole: the recorder retries a part whose stream is behind;
- a malformed event is dead-lettered with its reason, its neighbours are recorded;
- a database that refuses connections makes the task retry, not drop the message.
"""

import base64
import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest
import redis
from sqlalchemy.engine import make_url

from events import EventStore

pytestmark = [pytest.mark.redis, pytest.mark.slow]

HERE = Path(__file__).resolve().parent
PUBLISHER = HERE / "publish_simulated.py"
LABRXIV = Path(sys.executable).with_name("labrxiv")
PG_ADMIN = os.environ.get("LABRXIV_TEST_PG", "postgresql://postgres@127.0.0.1:5432/postgres")
VISIBILITY = 4
"""Seconds: short, so a killed worker's message comes back within the test."""
DEADLINE = 60.0

_spec = importlib.util.spec_from_file_location("publish_simulated", PUBLISHER)
assert _spec is not None and _spec.loader is not None
publisher = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(publisher)


# -- processes -------------------------------------------------------------------------


class Worker:
    """A `labrxiv worker` on the events queue, in a session of its own."""

    def __init__(self, env: dict[str, str], log: Path, pool: str = "prefork") -> None:
        self.env = env
        self.log = log
        self.pool = pool
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> "Worker":
        with self.log.open("ab") as out:
            out.write(f"---- start ({self.pool}) ----\n".encode())
            out.flush()
            self.proc = subprocess.Popen(
                [str(LABRXIV), "worker", "--queues", "events", "-c", "1", "-P", self.pool],
                env=self.env,
                cwd=self.log.parent,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        return self

    def kill(self) -> None:
        """SIGKILL the worker and its pool children (its process group) and reap it."""
        if self.proc is None:
            return
        try:  # the group even if its leader is gone: no pool child outlives a test
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(timeout=10)

    def children(self) -> list[int]:
        """Pids of the prefork pool processes."""
        assert self.proc is not None
        found = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == self.proc.pid:
                found.append(int(stat.parent.name))
        return found

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def since_start(self) -> str:
        """The log of the latest start only."""
        return self.text().rsplit("---- start", 1)[-1]

    def tail(self, lines: int = 40) -> str:
        return "\n".join(self.text().splitlines()[-lines:])


@pytest.fixture
def workers(tmp_path: Path) -> Iterator[list[Worker]]:
    """Workers a test starts; every one is killed at the end, whatever happened."""
    started: list[Worker] = []
    try:
        yield started
    finally:
        for worker in started:
            worker.kill()


def environment(redis_url: str, store_url: str, tmp_path: Path, visibility: int) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        LABRXIV_REDIS_URL=redis_url,
        LABRXIV_DATABASE_URL=store_url,
        LABRXIV_VISIBILITY_TIMEOUT=str(visibility),
        LABRXIV_DATA_DIR=str(tmp_path / "data"),
        LABRXIV_LOG_LEVEL="INFO",
    )
    return env


def start_recorder(
    store_url: str, redis_url: str, tmp_path: Path, workers: list[Worker]
) -> tuple[dict[str, str], EventStore, redis.Redis, Worker]:
    """A recorder worker on the log at `store_url` (its tables created first, by opening
    the store here) and the test's Redis: (its environment, the store, Redis, it)."""
    env = environment(redis_url, store_url, tmp_path, VISIBILITY)
    store = EventStore.from_url(store_url)
    client = redis.Redis.from_url(redis_url)
    worker = Worker(env, tmp_path / "worker.log").start()
    workers.append(worker)
    return env, store, client, worker


def publish(env: dict[str, str], *args: str) -> dict[str, int]:
    """Run the publisher in its own process; its summary."""
    done = subprocess.run(
        [sys.executable, str(PUBLISHER), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


# -- checks ----------------------------------------------------------------------------


def expected_ids(runs: int, attempts: int, first: int = 0) -> set[uuid.UUID]:
    """The ids the publisher derives (simulated runs are deterministic)."""
    return {event.id for events in publisher.runs(runs, attempts, first) for event in events}


def wait_for(
    what: str, ready: Callable[[], bool], worker: Worker | None = None, every: float = 0.2
) -> None:
    """Poll `ready` until it holds; fail with the worker's log after `DEADLINE`."""
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:
        if ready():
            return
        time.sleep(every)
    log = f"\nworker log:\n{worker.tail()}" if worker else ""
    pytest.fail(f"not within {DEADLINE:.0f}s: {what} ({ready}){log}")


def broker_idle(client: redis.Redis) -> bool:
    """Nothing queued and nothing delivered but unacknowledged."""
    return client.llen("events") == 0 and client.hlen("unacked") == 0


class Settled:
    """True once the broker is idle and the log holds `expected` events; says where it is."""

    def __init__(self, client: redis.Redis, store: EventStore, expected: int) -> None:
        self.client, self.store, self.expected = client, store, expected

    def __call__(self) -> bool:
        return broker_idle(self.client) and self.store.count() >= self.expected

    def __str__(self) -> str:
        return (
            f"log {self.store.count()}/{self.expected} events, "
            f"{self.client.llen('events')} queued, {self.client.hlen('unacked')} unacked"
        )


def assert_exactly_once(store: EventStore, expected: set[uuid.UUID]) -> None:
    """The log holds each expected event once, and each stream is versions 0..n."""
    records = list(store.iter_records())
    ids = [record.id for record in records]
    assert len(ids) == len(set(ids)), "an event id is in the log twice"
    assert set(ids) == expected, (
        f"{len(expected - set(ids))} events missing, {len(set(ids) - expected)} unexpected"
    )
    versions: dict[str, list[int]] = defaultdict(list)
    for record in records:
        versions[record.stream].append(record.version)
    for stream, seen in versions.items():
        assert sorted(seen) == list(range(len(seen))), f"{stream}: versions are not 0..n"


def in_flight(client: redis.Redis) -> list[tuple[str, set[uuid.UUID]]]:
    """The delivered, unacknowledged messages: (task id, event ids it carries)."""
    found = []
    for raw in client.hvals("unacked"):
        payload, _exchange, _routing_key = json.loads(raw)
        args, _kwargs, _embed = json.loads(base64.b64decode(payload["body"]))
        body = json.loads(args[0])
        found.append((payload["headers"]["id"], {uuid.UUID(item["id"]) for item in body["events"]}))
    return found


def stored_of(store: EventStore, ids: set[uuid.UUID]) -> int:
    return sum(store.get(event_id) is not None for event_id in ids)


# -- tests -----------------------------------------------------------------------------


def test_events_from_another_process_land_exactly_once(
    store_url: str, redis_url: str, tmp_path: Path, workers: list[Worker]
) -> None:
    """Many messages from a publisher process; then the same messages again (a producer
    that retries): one copy of each event, streams contiguous, broker drained. One
    consumer and no failure: messages are recorded in the order sent, so a run may
    span messages here."""
    runs, attempts = 12, 40
    env, store, client, worker = start_recorder(store_url, redis_url, tmp_path, workers)
    expected = expected_ids(runs, attempts)

    sent = publish(env, str(runs), str(attempts), "--chunk", "25")
    assert sent["events"] == len(expected) and sent["messages"] > 50
    wait_for("every event recorded", Settled(client, store, len(expected)), worker)
    assert_exactly_once(store, expected)

    publish(env, str(runs), str(attempts), "--chunk", "25")
    wait_for("the duplicate messages consumed", lambda: broker_idle(client), worker)
    assert_exactly_once(store, expected)
    assert store.dead_letter_count() == 0
    assert worker.text().count("succeeded in") == 2 * sent["messages"]


def batch_under_way(client: redis.Redis, store: EventStore) -> bool:
    """A message is delivered and unacknowledged, and its batch is not stored yet."""
    messages = in_flight(client)
    return bool(messages) and store.get(next(iter(messages[0][1]))) is None


def into_a_task(
    worker: Worker, client: redis.Redis, store: EventStore, total: int, drained: bool = False
) -> bool:
    """Return while the worker is inside a task: the log has grown since the call (the
    worker is draining the queue), and a message is delivered, unacknowledged and not
    yet stored. A batch of ~3000 events takes 0.1-1 s, so a kill now lands inside it.

    Not "just after a commit": the worker then acknowledges and BRPOPs the next
    message, and a kill in the few ms before kombu records it as unacked loses it
    (measured: ~15 ms for a 1.7 MB message; see kombu's Redis transport).

    `drained`: return False instead of waiting when the queue is empty and nothing is
    in flight (the worker recorded everything before this look: only more messages can
    give it a task to be killed in)."""

    def empty() -> bool:
        return drained and client.llen("events") == 0 and not in_flight(client)

    before = store.count()
    wait_for(
        "a batch recorded", lambda: before < store.count() < total or empty(), worker, every=0.02
    )
    if empty():
        return False
    wait_for(
        "a batch under way", lambda: batch_under_way(client, store) or empty(), worker, every=0.005
    )
    return not empty()


def assert_nothing_lost(client: redis.Redis, store: EventStore, messages: int, size: int) -> None:
    """Every message is recorded, queued or unacked (and will come back)."""
    unacked_unstored = sum(store.get(next(iter(ids))) is None for _, ids in in_flight(client))
    accounted = store.count() // size + client.llen("events") + unacked_unstored
    assert accounted == messages, (
        f"{messages - accounted} message(s) neither recorded, queued nor unacked: lost "
        "between kombu's BRPOP and its unacked bookkeeping"
    )


def kill_mid_task(
    worker: Worker,
    client: redis.Redis,
    store: EventStore,
    total: Callable[[], int],
    more: Callable[[int], None],
) -> tuple[str, set[uuid.UUID], int]:
    """Kill the worker inside a task; the task id and event ids of its message (left
    unacknowledged) and how many of them were stored. A kill that found no message in
    flight proves nothing: the worker is restarted and killed again, up to 5 times.

    The worker drains the queue while this looks: on a loaded machine it recorded every
    message before a look saw one under way (a CI run waited 60 s for a batch that could
    no longer come). Then `more(n)` publishes more messages (runs of new names; `total()`
    counts them) and it looks again."""
    for attempt in range(1, 6):
        if not into_a_task(worker, client, store, total(), drained=True):
            more(attempt)
            continue
        worker.kill()
        messages = in_flight(client)
        assert len(messages) <= 1, "prefetch 1 with late acks: one message in flight at most"
        if messages:
            task_id, ids = messages[0]
            return task_id, ids, stored_of(store, ids)
        worker.start()
    pytest.fail(f"five kills landed between tasks, or five drains before a look\n{worker.tail()}")


@pytest.mark.parametrize(
    ("pool", "backend"),
    [("prefork", "pg_url"), ("solo", "sqlite_url")],
    ids=["prefork-pg", "solo-sqlite"],
)
def test_worker_killed_mid_task_redelivers_after_visibility_timeout(
    pool: str,
    backend: str,
    request: pytest.FixtureRequest,
    redis_url: str,
    tmp_path: Path,
    workers: list[Worker],
) -> None:
    """SIGKILL of the whole worker (pool children too) while it records a message: the
    message stays unacknowledged in Redis, a restarted worker gets it back after the
    visibility timeout, and the log ends with every event once."""
    store_url = request.getfixturevalue(backend)
    # Whole runs per message: a redelivered message comes back after later ones, and
    # a later part of a stream recorded before an earlier part is a version conflict.
    runs, attempts, per_message = 40, 250, 4
    env = environment(redis_url, store_url, tmp_path, VISIBILITY)
    store = EventStore.from_url(store_url)
    client = redis.Redis.from_url(redis_url)
    expected = expected_ids(runs, attempts)
    options = [str(runs), str(attempts), "--runs-per-message", str(per_message)]
    messages = publish(env, *options)["messages"]
    worker = Worker(env, tmp_path / "worker.log", pool).start()
    workers.append(worker)

    batches = 1

    def more(batch: int) -> None:  # all recorded before a look: runs of new names
        nonlocal expected, messages, batches
        batches += 1
        first = batch * runs
        expected |= expected_ids(runs, attempts, first)  # derived before they are sent
        messages += publish(env, *options, "--first", str(first))["messages"]

    task_id, ids, stored = kill_mid_task(worker, client, store, lambda: len(expected), more)
    assert_nothing_lost(client, store, messages, len(ids))
    # A batch is one transaction: the killed task stored all of its events or none.
    assert stored in (0, len(ids)), f"{stored} of {len(ids)}: a batch was half written"
    assert store.count() < len(expected)

    worker.start()  # at once, as a supervisor would
    wait_for("every event recorded", Settled(client, store, len(expected)), worker)
    assert_exactly_once(store, expected)
    assert store.dead_letter_count() == 0
    assert f"[{task_id}] received" in worker.since_start(), "the killed task was not redelivered"
    assert messages == batches * runs // per_message  # whole runs per message


EXITED = "exited with 'signal 9 (SIGKILL)'"
LOST = "raised error: WorkerLostError("


def test_prefork_child_killed_mid_task_is_requeued_at_once(
    sqlite_url: str, redis_url: str, tmp_path: Path, workers: list[Worker]
) -> None:
    """SIGKILL of the pool child only: the worker sees WorkerLostError and, with
    task_reject_on_worker_lost, puts the message back on the queue at once. The
    visibility timeout is an hour here, so only that requeue can bring it back."""
    runs, attempts, per_message = 40, 250, 4
    env = environment(redis_url, sqlite_url, tmp_path, visibility=3600)
    store = EventStore.from_url(sqlite_url)
    client = redis.Redis.from_url(redis_url)
    expected = expected_ids(runs, attempts)
    publish(env, str(runs), str(attempts), "--runs-per-message", str(per_message))
    worker = Worker(env, tmp_path / "worker.log", "prefork").start()
    workers.append(worker)

    def kill_child() -> None:
        for pid in worker.children():
            os.kill(pid, signal.SIGKILL)

    for attempt in range(1, 11):
        # A kill that missed its task left the worker draining the queue while the death
        # was noticed (seconds): the next try needs messages still to come, or it waited
        # for a batch that never came (a CI run failed so). Runs of new names, new ids,
        # whose ids are derived before they are sent: derived after, on a loaded machine
        # the worker had recorded them all before the look (a CI run failed so too).
        if client.llen("events") < 3:
            first = attempt * runs
            more = expected_ids(runs, attempts, first)
            publish(
                env,
                str(runs),
                str(attempts),
                "--runs-per-message",
                str(per_message),
                "--first",
                str(first),
            )
            expected |= more
        if not into_a_task(worker, client, store, len(expected), drained=True):
            continue  # all recorded before the look: more runs, and look again
        exits, lost = worker.text().count(EXITED), worker.text().count(LOST)
        busy = in_flight(client)
        kill_child()
        # The child may finish its batch and take the next message between the first
        # look and the kill; the message it held at the kill is still unacknowledged
        # right after it (the parent puts it back only seconds later).
        busy += in_flight(client)
        # The parent notices the death a few seconds later and reports the job lost
        # with its child. A child killed before it took its job (or after it finished)
        # loses none: the pool hands the job to the next child, and we try again.
        wait_for("the death noticed", lambda n=exits: worker.text().count(EXITED) > n, worker)
        # The job's loss is reported right after the death, when the child held one (a
        # fixed half second stood for "right after": a busy machine took longer).
        reported = time.monotonic() + 10
        while worker.text().count(LOST) <= lost and time.monotonic() < reported:
            time.sleep(0.05)
        if busy and worker.text().count(LOST) > lost:
            break
    else:
        pytest.fail(f"no kill landed inside a task\n{worker.tail()}")
    in_flight_ids = [task_id for task_id, _events in busy]

    wait_for("every event recorded", Settled(client, store, len(expected)), worker)
    assert_exactly_once(store, expected)
    assert store.dead_letter_count() == 0
    assert worker.proc is not None and worker.proc.poll() is None, "the worker itself survived"
    # The log does not say which of the messages in flight the killed child held.
    again = [t for t in in_flight_ids if worker.text().count(f"[{t}] received") >= 2]
    assert again, "no task in flight at the kill was delivered again"


def test_a_streams_parts_arriving_later_part_first_are_all_recorded(
    sqlite_url: str, redis_url: str, tmp_path: Path, workers: list[Worker]
) -> None:
    """Every run is split over three messages sent last part first: each later part
    finds its stream behind and is retried (with backoff) until the earlier parts are
    in; every event lands once and nothing is dead-lettered."""
    runs, attempts = 3, 5
    env, store, client, worker = start_recorder(sqlite_url, redis_url, tmp_path, workers)
    expected = expected_ids(runs, attempts)
    sent = publish(env, str(runs), str(attempts), "--chunk", "6", "--reverse")
    assert sent["messages"] >= 3 * runs
    wait_for("every event recorded", Settled(client, store, len(expected)), worker)
    assert_exactly_once(store, expected)
    assert store.dead_letter_count() == 0
    assert "retrying in" in worker.text() and "is at version" in worker.text()


def test_malformed_events_are_dead_lettered_and_their_neighbours_recorded(
    sqlite_url: str, redis_url: str, tmp_path: Path, workers: list[Worker]
) -> None:
    """An invalid event inside a good message, a message holding only an invalid event,
    and a message that is not JSON: each is a dead letter with its reason; every good
    event (before and after the bad one in its message, and in the other messages) is
    recorded, and the recorder goes on."""
    runs, attempts = 4, 5
    env, store, client, worker = start_recorder(sqlite_url, redis_url, tmp_path, workers)
    expected = expected_ids(runs, attempts)

    publish(env, str(runs), str(attempts), "--chunk", "8", "--malformed")
    wait_for(
        "the good events recorded and three dead letters",
        lambda: Settled(client, store, len(expected))() and store.dead_letter_count() >= 3,
        worker,
    )
    assert_exactly_once(store, expected)
    letters = {letter.event_id: letter for letter in store.dead_letters()}
    assert len(letters) == 3 and store.dead_letter_count() == 3
    version = letters[str(publisher.BAD_VERSION_ID)]
    assert version.stream == "run-malformed-version"
    assert version.reason.startswith("invalid event: version:"), version.reason
    unknown = letters[str(publisher.BAD_TYPE_ID)]
    assert unknown.reason.startswith("invalid event: payload"), unknown.reason
    assert "no.such.type" in unknown.raw
    unreadable = letters[None]
    assert unreadable.reason.startswith("message is not JSON"), unreadable.reason
    assert unreadable.raw == publisher.NOT_JSON
    assert "Traceback" not in worker.text()


def test_database_refusing_connections_is_retried_not_dropped(
    pg_url: str, redis_url: str, tmp_path: Path, workers: list[Worker]
) -> None:
    """PostgreSQL stops accepting connections to the log's database while a message
    waits: the task retries with backoff (the message is never acknowledged as done),
    and once connections are allowed again every event is recorded once."""
    name = make_url(pg_url).database
    env, store, client, worker = start_recorder(pg_url, redis_url, tmp_path, workers)
    publish(env, "2", "5", "--runs-per-message", "1")
    wait_for("the first runs recorded", Settled(client, store, len(expected_ids(2, 5))), worker)
    store.engine.dispose()

    with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
        try:
            admin.execute(f'ALTER DATABASE "{name}" WITH ALLOW_CONNECTIONS false')
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s",
                (name,),
            )
            # Runs r0 and r1 again (already recorded) and r2, r3 (new).
            publish(env, "4", "5", "--runs-per-message", "1")
            # Four messages, each retried at least twice on average: the outage lasts
            # through several backoffs, not one lucky instant.
            wait_for(
                "the worker retrying",
                lambda: worker.text().count("database or broker away, retrying") >= 8,
                worker,
            )
        finally:
            admin.execute(f'ALTER DATABASE "{name}" WITH ALLOW_CONNECTIONS true')

    expected = expected_ids(4, 5)
    wait_for("every event recorded", Settled(client, store, len(expected)), worker)
    assert_exactly_once(store, expected)
    assert store.dead_letter_count() == 0
