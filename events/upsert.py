"""INSERT … ON CONFLICT for the database a connection is on (SQLite or PostgreSQL).

SQLAlchemy's core `insert` knows no conflict clause; each dialect's own does, with the
same methods. Every table that is written "if missing" or "or else updated" (checkpoints,
leases, blobs, read-model bookkeeping) goes through these two.
"""

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import ColumnElement, Connection, Table
from sqlalchemy.dialects import postgresql, sqlite

DialectInsert = postgresql.Insert | sqlite.Insert


def _insert(conn: Connection | str, table: Table) -> DialectInsert:
    dialect = conn if isinstance(conn, str) else conn.dialect.name
    if dialect == "postgresql":
        return postgresql.insert(table)
    return sqlite.insert(table)


def insert_ignore(
    conn: Connection | str, table: Table, index_elements: Sequence[str] | None = None
) -> DialectInsert:
    """INSERT into `table` that leaves a row whose key is already stored as it is (ON
    CONFLICT DO NOTHING; `index_elements`: the key, if not any unique constraint).
    `conn`: the connection, or the name of its dialect (a statement built once)."""
    return _insert(conn, table).on_conflict_do_nothing(index_elements=index_elements)


def upsert(
    conn: Connection | str,
    table: Table,
    values: Mapping[str, Any] | Sequence[Mapping[str, Any]],
    where: ColumnElement[bool] | None = None,
) -> DialectInsert:
    """INSERT `values` into `table`, a stored row of the same primary key taking the new
    values of its other columns instead (only where `where` holds of the stored row).
    `conn`: the connection, or the name of its dialect (a statement built once)."""
    statement = _insert(conn, table).values(values)
    key = [column.name for column in table.primary_key.columns]
    others = [column.name for column in table.c if column.name not in key]
    return statement.on_conflict_do_update(
        index_elements=key, set_={name: statement.excluded[name] for name in others}, where=where
    )
