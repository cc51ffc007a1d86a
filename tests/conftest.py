"""Shared fixtures: a SQLite file, a fresh PostgreSQL database, a clean Redis database.

Tests that need a server skip when it is down on a developer's machine, and fail
under CI=true (CI always has them: .ci/run starts them).
"""

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
import redis

PG_ADMIN = os.environ.get("LABRXIV_TEST_PG", "postgresql://postgres@127.0.0.1:5432/postgres")
REDIS_BASE = os.environ.get("LABRXIV_TEST_REDIS", "redis://127.0.0.1:6379")
IN_CI = os.environ.get("CI", "").lower() == "true"


def _unavailable(what: str, exc: Exception) -> None:
    if IN_CI:
        pytest.fail(f"{what} is not reachable under CI=true: {exc}")
    pytest.skip(f"{what} is not running on this machine: {exc}")


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


@pytest.fixture
def redis_url() -> Iterator[str]:
    """Database 9 of the machine's Redis, emptied before and after the test."""
    url = f"{REDIS_BASE}/9"
    client = redis.Redis.from_url(url, socket_connect_timeout=3)
    try:
        client.ping()
    except redis.RedisError as exc:
        _unavailable("Redis", exc)
    client.flushdb()
    try:
        yield url
    finally:
        client.flushdb()
        client.close()
