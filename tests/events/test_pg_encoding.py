"""A PostgreSQL database created with the SQL_ASCII encoding (what `initdb` makes where no
UTF-8 locale is installed, as in a minimal Debian image) holds the log as any other:
found running the compose stack on images built from Debian's packages, where the first
command died in SQLAlchemy's connect with "cannot use a string pattern on a bytes-like
object" (psycopg returns text as bytes in a SQL_ASCII session)."""

import os
import uuid
from collections.abc import Iterator

import psycopg
import pytest

from events import Event, EventStore
from events.ids import new_id, utcnow
from events.payloads import RunStarted, ToolInvoked

PG_ADMIN = os.environ.get("LABRXIV_TEST_PG", "postgresql://postgres@127.0.0.1:5432/postgres")

pytestmark = pytest.mark.postgres


@pytest.fixture
def ascii_url(pg_url: str) -> Iterator[str]:
    name = f"labrxiv_ascii_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
        admin.execute(
            f"CREATE DATABASE \"{name}\" ENCODING 'SQL_ASCII' LC_COLLATE 'C' LC_CTYPE 'C' "
            "TEMPLATE template0"
        )
    try:
        yield pg_url.rsplit("/", 1)[0] + "/" + name
    finally:
        with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_a_sql_ascii_database_holds_the_log_text_included(ascii_url: str) -> None:
    store = EventStore.from_url(ascii_url)
    try:
        text = "naïve Bayes — 95 % ✓"
        events = [
            Event(id=new_id(), stream="run-x", version=0, occurred_at=utcnow(),
                  payload=RunStarted(task="t", lab="a", policy="search")),
            Event(id=new_id(), stream="run-x", version=1, occurred_at=utcnow(),
                  payload=ToolInvoked(call_id="c", tool="bash", args={"cmd": text})),
        ]  # fmt: skip
        store.append(events)
        read = store.read_stream("run-x")
        assert [e.id for e in read] == [e.id for e in events]
        assert read[1].payload.args == {"cmd": text}
        assert next(store.iter_records()).stream == "run-x"
    finally:
        store.engine.dispose()
