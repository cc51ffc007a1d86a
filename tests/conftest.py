"""Shared fixtures: a SQLite file, a fresh PostgreSQL database, a clean Redis database.

Tests that need a server skip when it is missing on a developer's machine, and fail
under CI=true (CI always has them: .ci/run starts PostgreSQL and installs Redis).

Redis: each test session starts a `redis-server` of its own on a free port (no
persistence), so two test runs on one machine (a developer's and CI's, or two
clones) never flush each other's queues, as a shared fixed database number did.
"""

import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
import redis
from hypothesis import settings as hypothesis_settings

from tests.needs import IN_CI, missing
from tests.ports import free_port

PG_ADMIN = os.environ.get("LABRXIV_TEST_PG", "postgresql://postgres@127.0.0.1:5432/postgres")
REDIS_BASE = os.environ.get("LABRXIV_TEST_REDIS")
"""A Redis to use instead of the session's own (e.g. `redis://127.0.0.1:6379`)."""

# Under CI the property and fuzz suites draw the same examples on every run of the same
# code: a new draw that finds a new bug is a finding for a developer's run, not a CI
# run that fails once in N on unchanged code (CI never flakes). Developers' runs draw
# fresh examples each time.
hypothesis_settings.register_profile("ci", derandomize=True, database=None)
if IN_CI:
    hypothesis_settings.load_profile("ci")


def _unavailable(what: str, exc: Exception) -> None:
    missing(f"{what} is not running on this machine: {exc}")


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    """A fresh SQLite log file."""
    return f"sqlite:///{tmp_path / 'log.db'}"


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A fresh PostgreSQL database, dropped after the test."""
    name = f"labrxiv_t_{uuid.uuid4().hex[:12]}"
    try:
        admin = psycopg.connect(PG_ADMIN, autocommit=True, connect_timeout=5)
    except psycopg.OperationalError as exc:
        _unavailable("PostgreSQL", exc)
    with admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    base = PG_ADMIN.rsplit("/", 1)[0]
    try:
        yield f"postgresql+psycopg://{base.split('://', 1)[1]}/{name}"
    finally:
        with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest) -> str:
    """Each backend in turn: the conformance suite runs against both."""
    name = "sqlite_url" if request.param == "sqlite" else "pg_url"
    return request.getfixturevalue(name)


@pytest.fixture(scope="session")
def redis_base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """This test session's own Redis server (or `LABRXIV_TEST_REDIS`)."""
    if REDIS_BASE:
        yield REDIS_BASE
        return
    binary = shutil.which("redis-server")
    if binary is None:
        missing("redis-server is not installed (Debian: apt-get install redis-server)")
    port = free_port()
    folder = tmp_path_factory.mktemp("redis")
    server = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        + ["--dir", str(folder), "--logfile", str(folder / "redis.log")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    client = redis.Redis(port=port, socket_connect_timeout=1)
    try:
        for _ in range(100):
            try:
                client.ping()
                break
            except redis.ConnectionError:
                if server.poll() is not None:
                    pytest.fail(f"redis-server exited at start: {folder / 'redis.log'}")
                time.sleep(0.05)
        else:
            pytest.fail(f"redis-server did not answer on port {port} within 5 s")
        yield f"redis://127.0.0.1:{port}"
    finally:
        client.close()
        server.terminate()
        server.wait(timeout=10)


@pytest.fixture
def redis_url(redis_base: str) -> Iterator[str]:
    """Database 9 of the session's Redis, emptied before and after the test."""
    url = f"{redis_base}/9"
    client = redis.Redis.from_url(url, socket_connect_timeout=3)
    try:
        client.ping()
    except redis.RedisError as exc:
        _unavailable("Redis", exc)
    client.flushdb()
    try:
        yield url
        _no_consumer_left(client)
    finally:
        client.flushdb()
        client.close()


def _no_consumer_left(client: redis.Redis, grace: float = 15.0) -> None:
    """Fail the test if something it started still consumes from its Redis database once
    it has ended (its processes stopped): the next test on this session's Redis would have
    its messages taken by a worker of an earlier test, writing to that test's database.
    A consumer is a client blocked in a pop (kombu's BRPOP: flag `b`) or subscribed
    (Celery's broadcasts: flag `P`, which a health check's PING leaves set). Not checked
    on a Redis shared with other test sessions (`LABRXIV_TEST_REDIS`): theirs are there."""
    if REDIS_BASE:
        return
    db = str(client.connection_pool.connection_kwargs.get("db", 0))
    deadline = time.monotonic() + grace
    clean = 0  # looks in a row that found none: a consumer between two pops is not blocked
    while True:
        left = [
            c
            for c in client.client_list()
            if c.get("db") == db and ("b" in c.get("flags", "") or "P" in c.get("flags", ""))
        ]
        clean = 0 if left else clean + 1
        if clean >= 3 or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    for c in left:
        client.client_kill_filter(_id=c["id"])
    assert not left, "consumers of this test's Redis database outlived it: " + "; ".join(
        f"{c.get('addr')} {c.get('name') or ''} cmd={c.get('cmd')} flags={c.get('flags')} "
        f"age={c.get('age')}s"
        for c in left
    )


EXTRA_POLICIES = Path(__file__).resolve().parent / "workers" / "policies_extra"
"""Test policies (`scripted`, `inflating`, `modelled`), each in a folder of its own."""


@pytest.fixture
def extra_policies() -> Iterator[None]:
    """The policies package with the test policies' folders beside the shipped ones."""
    import workers.lab.policies as policies

    policies.__path__.append(str(EXTRA_POLICIES))
    policies._classes.cache_clear()
    yield
    policies.__path__.remove(str(EXTRA_POLICIES))
    policies._classes.cache_clear()
