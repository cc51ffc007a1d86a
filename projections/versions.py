"""Which version of its fold each read model was built with, kept beside the checkpoints.

A read model is derived data: when a new labrxiv folds the same events into other rows
(a rule fixed, a count added), its `Projector.version` goes up, and a read model stored
at another version is dropped and replayed from the log (`ProjectionRunner.create_schema`).
A database built before versions were kept holds none: its read models count as version 1.
"""

from collections.abc import Mapping

from sqlalchemy import Column, Connection, Integer, String, Table, inspect, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlmodel import SQLModel

VERSIONS = Table(
    "projection_versions",
    SQLModel.metadata,
    Column("name", String(100), primary_key=True),
    Column("version", Integer, nullable=False),
)

UNRECORDED = 1
"""The version of a read model stored with no version (built before they were kept)."""


def read_versions(conn: Connection) -> dict[str, int]:
    """The stored version of each read model that has one (none before the table exists)."""
    if not inspect(conn).has_table(VERSIONS.name):
        return {}
    return dict(conn.execute(select(VERSIONS.c.name, VERSIONS.c.version)).all())


def record_versions(conn: Connection, versions: Mapping[str, int], replace: bool) -> None:
    """Store `versions` by read model name: over the stored ones if `replace`, else only
    where none is stored."""
    if not versions:
        return
    dialect_insert = pg_insert if conn.dialect.name == "postgresql" else sqlite_insert
    rows = [{"name": name, "version": version} for name, version in sorted(versions.items())]
    statement = dialect_insert(VERSIONS).values(rows)
    if replace:
        statement = statement.on_conflict_do_update(
            index_elements=[VERSIONS.c.name], set_={"version": statement.excluded.version}
        )
    else:
        statement = statement.on_conflict_do_nothing()
    conn.execute(statement)
