"""Reading the log ahead on one connection, and applying several pages in a transaction."""

from datetime import UTC, datetime

import pytest
from sqlalchemy import text
from sqlalchemy.exc import OperationalError
from test_rebuild import mixed_log, model_rows

from events import EventStore
from labrxiv.cli_errors import explain
from projections.catalogue import all_projectors
from projections.checkpoints import read_checkpoint
from projections.pages import _PageReader, batches, prefetched_pages
from projections.runner import ProjectionRunner
from tests.simulated import simulated_run

START = datetime(2026, 1, 1, tzinfo=UTC)


def test_pages_are_joined_in_order_and_never_split() -> None:
    pages = [[1, 2], [3], [4, 5, 6], [7]]
    assert list(batches(iter(pages), 3)) == [[1, 2, 3], [4, 5, 6], [7]]
    assert list(batches(iter(pages), 1)) == pages
    assert list(batches(iter([]), 4)) == []


def test_the_reader_sees_what_is_committed_after_it_began(store_url: str) -> None:
    """One connection reads every page; each page still sees the events committed since
    the last (SQLite: a read transaction kept open would keep its snapshot)."""
    store = EventStore.from_url(store_url)
    store.append(list(simulated_run("a", START, attempts=2)))  # 9 events
    pages = prefetched_pages(store, after=0, page=2, ahead=1)
    seen = next(pages)  # the reader has read at most two more pages: positions 3 to 6
    store.append(list(simulated_run("b", START, attempts=2)))
    for page in pages:
        seen += page
    assert [r.position for r in seen] == list(range(1, store.max_position() + 1))
    assert {r.stream for r in seen} == {"run-a", "run-b"}
    store.engine.dispose()


def test_a_transaction_of_several_pages_stops_at_the_limit(store_url: str) -> None:
    store = EventStore.from_url(store_url)
    store.append(mixed_log(seed=3))
    runner = ProjectionRunner(store, all_projectors(), page=2, batch_pages=3)
    assert runner.catch_up(limit=7) == 7 * len(runner.projectors)
    with store.engine.connect() as conn:
        assert {read_checkpoint(conn, p.name) for p in runner.projectors} == {7}
    runner.catch_up()
    batched = model_rows(store)

    one_page_each = ProjectionRunner(store, all_projectors(), page=2, batch_pages=1)
    one_page_each.rebuild()
    assert model_rows(store) == batched
    store.engine.dispose()


@pytest.mark.postgres
def test_a_page_read_the_database_refuses_raises_sqlalchemys_error(pg_url: str) -> None:
    """The PostgreSQL page reader reads through the driver's cursor; what the database
    does to it (here: its session ended by an administrator) surfaces as SQLAlchemy's
    error, which `labrxiv` turns into one line (`cli_errors.explain`)."""
    store = EventStore.from_url(pg_url)
    store.append(list(simulated_run("a", START, attempts=2)))
    with _PageReader(store) as read_page:
        assert [r.position for r in read_page(0, 3)] == [1, 2, 3]
        pid = read_page.conn.connection.driver_connection.info.backend_pid
        with store.engine.connect() as admin:
            admin.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
        with pytest.raises(OperationalError) as refused:
            read_page(3, 3)
    said = explain(refused.value)
    assert said is not None and said.startswith("cannot use the database")
    store.engine.dispose()
