"""Writing a page's rows in bulk, and knowing which of them cannot be stored yet.

A projector that folds a page into rows keyed by run stream takes out the rows it
touches, folds, and inserts them all again (`projections.run_rows`). Two facts make
that cheap in a rebuild and in most pages of a live log:

- A stream whose version 0 is in the page was born in it: version 0 has the lowest
  position of its stream (the store checks versions in order and draws positions in
  that order), so no event of it was applied before this page, and no row keyed by
  it can be stored. Its rows need no select and no delete.
- Rows that are not stored can be sent with PostgreSQL's COPY, one statement a table
  and page. `executemany` sent one INSERT per row (psycopg's pipeline): 41% of the
  time of `labrxiv rebuild` with every projector in a profile (bench/rebuild.py).

Stored rows are taken with `DELETE … RETURNING`: one round trip, not a select and a delete.
"""

import struct
from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from operator import itemgetter
from typing import Any

from sqlalchemy import Connection, Table, insert
from sqlalchemy.dialects import postgresql

from events.recorded import Recorded

_BINARY_TYPES = {
    "INTEGER": "int4",
    "BIGINT": "int8",
    "FLOAT": "float8",
    "DOUBLE PRECISION": "float8",
    "BOOLEAN": "bool",
    "TEXT": "text",
    "TIMESTAMP WITH TIME ZONE": "timestamptz",
}
"""PostgreSQL column types (as SQLAlchemy writes their DDL) COPY sends in binary."""


def born_streams(events: Iterable[Recorded]) -> set[str]:
    """The streams whose first event (version 0) is among `events`."""
    return {e.stream for e in events if e.version == 0}


def insert_rows(conn: Connection, table: Table, rows: Sequence[Mapping[str, Any]]) -> None:
    """Insert `rows` (every column of `table`, none of them stored yet) on `conn`.

    PostgreSQL: one binary COPY, in the caller's transaction (a table with a column
    type it does not send, such as JSON, goes through `insert`). SQLite: `executemany`.
    """
    if not rows:
        return
    types = _copy_types(table) if conn.dialect.name == "postgresql" else None
    if types is None:
        conn.execute(insert(table), list(rows))
        return
    columns = [c.name for c in table.c]
    # A tuple for two columns or more: every table here.
    tuples = list(map(itemgetter(*columns), rows))
    _check_int4(tuples, [i for i, name in enumerate(types) if name == "int4"])
    names = ", ".join(f'"{name}"' for name in columns)
    driver = conn.connection.driver_connection
    assert driver is not None
    with driver.cursor() as cursor:
        # Binary, not text: text formatted each timestamp in ~1.2 µs, which made a
        # row of the ledger cost 3.4 µs to send against 0.5 µs.
        with cursor.copy(f'COPY "{table.name}" ({names}) FROM STDIN (FORMAT BINARY)') as copy:
            copy.set_types(types)
            write = copy.write_row
            for row in tuples:
                write(row)


@cache
def _copy_types(table: Table) -> list[str] | None:
    """The type each column of `table` is sent as in a binary COPY (None: not all known)."""
    dialect = postgresql.dialect()
    types = []
    for column in table.c:
        ddl = column.type.compile(dialect=dialect)
        name = "text" if ddl.startswith("VARCHAR") else _BINARY_TYPES.get(ddl)
        if name is None:
            return None
        types.append(name)
    return types


_INT4_MIN, _INT4_MAX = -(2**31), 2**31 - 1


def _check_int4(rows: Sequence[tuple[Any, ...]], columns: Sequence[int]) -> None:
    """Refuse a value out of range for an `int4` column (at `columns`) as an INSERT would.

    psycopg's binary dumper wraps it silently (2**40 was stored as 0). Checked a column
    at a time with `min` and `max`, not in a dumper of our own: a Python `dump` for
    every value cost ~0.5 µs an event of the every-projector rebuild (bench/rebuild.py).
    """
    for index in columns:
        values = [value for row in rows if (value := row[index]) is not None]
        if values and (min(values) < _INT4_MIN or max(values) > _INT4_MAX):
            raise struct.error(f"a value of column {index} is out of range for an integer")
