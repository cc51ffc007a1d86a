"""Reading the log ahead for the runner: pages read by a thread, joined into batches.

The reader thread reads pages of the log while the projectors apply the ones it read
before, so reading overlaps the projectors' waits on the database. It reads every page
on one connection, and the runner applies several pages in one transaction (a batch):
both cut the hand-overs between this process and the database, which a busy machine
makes expensive, as each waits for a core (bench/rebuild.py, docs/benchmarks.md).
"""

import queue
import threading
from collections.abc import Generator, Iterator
from typing import Any, TypeVar

import orjson
import psycopg
from sqlalchemy import Integer, bindparam, select
from sqlalchemy.exc import DBAPIError

from events import EventStore
from events.recorded import Recorded
from events.store import EVENTS, rows_to_records

T = TypeVar("T")

PAGES_AHEAD = 4
"""Pages the reader thread may have read before they are applied: one batch. With one,
the reader sat idle while the projectors waited on the database for their writes, and
those waits were lost time (bench/rebuild.py)."""


def batches(pages: Iterator[list[T]], size: int) -> Iterator[list[T]]:
    """`pages` joined in order into lists of at least `size` events (the last may hold
    fewer; a page is never split)."""
    batch: list[T] = []
    for page in pages:
        batch = page if not batch else batch + page
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def prefetched_pages(
    store: EventStore, after: int, page: int, limit: int | None = None, ahead: int = PAGES_AHEAD
) -> Generator[list[Recorded], None, None]:
    """Pages of the log after `after` (about `limit` events, if given), read by a thread up
    to `ahead` pages in advance."""
    pages: queue.Queue[list[Recorded] | BaseException] = queue.Queue(maxsize=ahead)
    stop = threading.Event()

    def read() -> None:
        position, left = after, limit
        try:
            with _PageReader(store) as read_page:
                while not stop.is_set():
                    batch = read_page(position, page) if left is None or left > 0 else []
                    if not _offer(pages, batch, stop) or not batch:
                        return
                    position = batch[-1].position
                    left = None if left is None else left - len(batch)
        except BaseException as error:  # raised where the pages are applied
            _offer(pages, error, stop)

    reader = threading.Thread(target=read, name="labrxiv-prefetch", daemon=True)
    reader.start()
    try:
        while True:
            batch = pages.get()
            if isinstance(batch, BaseException):
                raise batch
            if not batch:
                return
            yield batch
    finally:
        stop.set()
        reader.join()


_PAGE = (
    f"SELECT {', '.join(c.name for c in EVENTS.c if c.name != 'payload')}, payload::text "
    f"FROM {EVENTS.name} WHERE position > %s ORDER BY position LIMIT %s"
)
"""A page of the log after a position (PostgreSQL), every column in `rows_to_records`'
order, the payload as its JSON text (`_PageReader`)."""


_PAGE_AFTER = (
    select(EVENTS)
    .where(EVENTS.c.position > bindparam("after"))
    .order_by(EVENTS.c.position)
    .limit(bindparam("limit", type_=Integer))
)
"""A page of the log after a position (SQLite), built once: a catch-up reads two pages or
more."""


class _PageReader:
    """One connection for all the pages a reader reads, as `read_page(after, limit)`.

    `EventStore.read_records` checks a connection out of the pool for every page, and on
    PostgreSQL the pool pings it first and rolls it back when it is returned: three round
    trips a page where the read itself is one. Here the connection is checked out once;
    on PostgreSQL it reads in autocommit (each page its own snapshot, no BEGIN and no
    ROLLBACK); on SQLite each page's read transaction is ended after it, so the next page
    sees what was committed since (a WAL read transaction keeps its snapshot).
    """

    def __init__(self, store: EventStore) -> None:
        self.conn = store.engine.connect()
        self.autocommit = self.conn.dialect.name == "postgresql"
        self.cursor: Any = None
        if self.autocommit:
            self.conn = self.conn.execution_options(isolation_level="AUTOCOMMIT")
            driver = self.conn.connection.driver_connection
            assert driver is not None and driver.autocommit
            # The driver's own cursor: its rows are what `rows_to_records` takes (psycopg
            # loads the ids and times), and SQLAlchemy's result rows around them cost ~3 µs
            # an event on PostgreSQL, a third of reading a page (bench/rebuild.py:
            # `iter_records`). Binary rows: ids, times and numbers cost psycopg less to
            # load than their text (~1 µs an event of ~6). The payload comes as text and
            # is parsed here: psycopg's JSON loaders are Python code called once a value,
            # which made a payload cost ~2.4 µs to load against ~1.6 (text, then orjson).
            self.cursor = driver.cursor(binary=True)

    def __enter__(self) -> "_PageReader":
        return self

    def __exit__(self, *_exc: object) -> None:
        if self.cursor is not None:
            self.cursor.close()
        self.conn.close()

    def __call__(self, after: int, limit: int) -> list[Recorded]:
        if self.cursor is not None:
            try:
                rows = self.cursor.execute(_PAGE, (after, limit)).fetchall()
            except psycopg.Error as error:  # as SQLAlchemy raises it on its own path
                raise DBAPIError.instance(_PAGE, (after, limit), error, psycopg.Error) from error
            loads = orjson.loads
            return rows_to_records([(*row[:11], loads(row[11])) for row in rows])
        rows = self.conn.execute(_PAGE_AFTER, {"after": after, "limit": limit}).all()
        if not self.autocommit:
            self.conn.rollback()
        return rows_to_records(rows)


def _offer(
    pages: "queue.Queue[list[Recorded] | BaseException]",
    item: list[Recorded] | BaseException,
    stop: threading.Event,
) -> bool:
    """Put `item` on `pages` once there is room; False if the reader was stopped first."""
    while not stop.is_set():
        try:
            pages.put(item, timeout=0.05)
            return True
        except queue.Full:
            continue
    return False
