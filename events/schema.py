"""Creating tables in the log's database, safe when many processes start at once.

Every process that opens the log creates what it needs (the log's tables, read models,
checkpoints, leases) if missing. Started together on a fresh PostgreSQL database, two
`CREATE TABLE`s of the same table race: one dies with `UniqueViolation` on
`pg_type_typname_nsp_index`. Creation is therefore serialized: on
PostgreSQL by a transaction-scoped advisory lock, on SQLite by a transaction begun
IMMEDIATE (its single writer lock), and the existence checks run inside it.
"""

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from sqlalchemy import Connection, Engine, Table, inspect, text

from events.engines import writing

SCHEMA_LOCK = 0x6C61627278697621
"""The PostgreSQL advisory lock key every labrxiv process takes to create tables."""


def create_tables(
    engine: Engine, tables: Sequence[Table], then: Callable[[Connection], object] | None = None
) -> None:
    """Create whichever of `tables` do not exist yet (a cheap look first: they almost
    always do), one process at a time; `then` writes what goes with them in the same
    transaction (another process sees the tables with it or not at all)."""
    inspector = inspect(engine)
    if then is None and all(inspector.has_table(table.name) for table in tables):
        return
    with schema_transaction(engine) as conn:
        for table in tables:
            table.create(conn, checkfirst=True)
        if then is not None:
            then(conn)


@contextmanager
def schema_transaction(engine: Engine) -> Iterator[Connection]:
    """A writer transaction that holds the database against every other labrxiv process
    changing tables or read-model bookkeeping (PostgreSQL: the schema advisory lock;
    SQLite: a transaction begun IMMEDIATE, its single writer lock)."""
    with writing(engine) as conn:
        if conn.dialect.name == "postgresql":
            conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": SCHEMA_LOCK})
        yield conn
