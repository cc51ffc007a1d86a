"""Bulk writes of a page's new rows (COPY on PostgreSQL), and the runs a page gives birth to."""

import struct
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import func, insert, select

from events import EventStore
from events.recorded import Recorded
from projections.bulk import born_streams, insert_rows
from projections.ledger import LEDGER, LedgerProjector
from projections.runner import ProjectionRunner

AT = datetime(2026, 3, 1, 9, 0, 30, 250000, tzinfo=UTC)


def recorded(stream: str, version: int, position: int) -> Recorded:
    return Recorded(
        position, uuid.uuid4(), stream, version, "tool.invoked", 1, AT, AT, None, None, None, {}
    )


def test_a_stream_is_born_in_the_page_that_holds_its_version_0() -> None:
    page = [recorded("run-a", 3, 10), recorded("run-b", 0, 11), recorded("run-b", 1, 12)]
    assert born_streams(page) == {"run-b"}
    assert born_streams([]) == set()


def ledger_row(call_id: str, **values: Any) -> dict[str, Any]:
    """A ledger row with every column set, in each type the read models use."""
    return (
        {c.name: None for c in LEDGER.c}
        | {
            "run": "run-a",
            "call_id": call_id,
            "kind": "model",
            "lab": "lab-a",
            "campaign": "c1",
            "status": "responded",
            "invoked_at": AT,
            "returned_at": AT,
            "position": 2**40,  # BIGINT
            "model": "gpt-x",
            "attempt": 2,
            "latency_s": 1.5,
            "input_tokens": 1000,
            "output_tokens": 0,
            "cost_usd": 0.0038,
            "cost_known": False,
        }
        | values
    )


@pytest.fixture
def ledger_store(store_url: str) -> Iterator[EventStore]:
    store = EventStore.from_url(store_url)
    ProjectionRunner(store, [LedgerProjector()]).create_schema()
    yield store
    store.engine.dispose()


def test_rows_read_back_as_an_insert_writes_them(ledger_store: EventStore) -> None:
    with ledger_store.engine.begin() as conn:
        insert_rows(conn, LEDGER, [ledger_row("bulk-1"), ledger_row("bulk-2", exit_code=-9)])
        conn.execute(insert(LEDGER), [ledger_row("insert-1"), ledger_row("insert-2", exit_code=-9)])
        insert_rows(conn, LEDGER, [])  # nothing to write: no statement
    with ledger_store.engine.connect() as conn:
        stored = {r["call_id"]: dict(r) for r in conn.execute(select(LEDGER)).mappings()}
    for suffix in ("1", "2"):
        bulk, inserted = stored[f"bulk-{suffix}"], stored[f"insert-{suffix}"]
        assert {**bulk, "call_id": None} == {**inserted, "call_id": None}
    assert stored["bulk-2"]["exit_code"] == -9


@pytest.mark.parametrize("tokens", [2**40, 2**31, -(2**31) - 1])
def test_a_number_too_large_for_its_column_is_refused_not_wrapped(pg_url: str, tokens: int) -> None:
    """psycopg's binary COPY wrote 2**40 into an INTEGER column as 0; an INSERT refuses it."""
    store = EventStore.from_url(pg_url)
    ProjectionRunner(store, [LedgerProjector()]).create_schema()
    with pytest.raises(struct.error), store.engine.begin() as conn:
        rows = [ledger_row("small", input_tokens=2**31 - 1), ledger_row("nulls")]
        insert_rows(conn, LEDGER, [*rows, ledger_row("big", input_tokens=tokens)])
    with store.engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(LEDGER)).scalar() == 0
    store.engine.dispose()
