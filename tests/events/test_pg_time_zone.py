"""Times come back from PostgreSQL in UTC whatever the server's or database's time zone:
every timestamp in the log is UTC (`events.ids.utcnow`), and SQLite gives them back so.
A database set to another zone gave them back in that zone (the same instant, another
offset: a replay printed 05:00 for an event written at 10:00 UTC), and psycopg converted
each one into a `ZoneInfo` zone, ~0.5 µs a time of a rebuild's read (bench/rebuild.py)."""

import os
import uuid
from collections.abc import Iterator
from datetime import UTC, timedelta

import psycopg
import pytest

from events import Event, EventStore
from events.ids import new_id, utcnow
from events.payloads import RunStarted
from projections.pages import prefetched_pages

PG_ADMIN = os.environ.get("LABRXIV_TEST_PG", "postgresql://postgres@127.0.0.1:5432/postgres")

pytestmark = pytest.mark.postgres


@pytest.fixture
def new_york_url(pg_url: str) -> Iterator[str]:
    """A database whose sessions default to New York time."""
    name = pg_url.rsplit("/", 1)[1]
    with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
        admin.execute(f"ALTER DATABASE \"{name}\" SET timezone TO 'America/New_York'")
    yield pg_url


def test_times_are_read_back_in_utc(new_york_url: str) -> None:
    store = EventStore.from_url(new_york_url)
    try:
        at = utcnow()
        event = Event(
            id=new_id(), stream=f"run-{uuid.uuid4().hex[:6]}", version=0, occurred_at=at,
            payload=RunStarted(task="t", lab="a", policy="search"),
        )  # fmt: skip
        store.append([event])
        with store.engine.connect() as conn:
            zone = conn.exec_driver_sql("SHOW TIME ZONE").scalar()
        assert zone == "UTC"
        (read,) = store.read_stream(event.stream)
        (record,) = next(prefetched_pages(store, 0, 10))
        for moment in (read.occurred_at, record.occurred_at, record.recorded_at):
            assert moment.utcoffset() == timedelta(0)
            assert moment.tzinfo is UTC
        assert read.occurred_at == at
    finally:
        store.engine.dispose()


def _session(url: str) -> tuple[str, str]:
    """The time zone and statement timeout of a session the store's engine opens."""
    store = EventStore.from_url(url)
    try:
        with store.engine.connect() as conn:
            zone = conn.exec_driver_sql("SHOW TIME ZONE").scalar()
            timeout = conn.exec_driver_sql("SHOW statement_timeout").scalar()
            return str(zone), str(timeout)
    finally:
        store.engine.dispose()


def test_options_in_the_url_are_kept_beside_it(pg_url: str) -> None:
    assert _session(f"{pg_url}?options=-c%20statement_timeout%3D4321") == ("UTC", "4321ms")


def test_pgoptions_from_the_environment_are_kept_too(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """libpq reads PGOPTIONS only when no `options` is given: the engine passes it on."""
    monkeypatch.setenv("PGOPTIONS", "-c statement_timeout=1234")
    assert _session(pg_url) == ("UTC", "1234ms")
