"""Which version of its fold each read model was built with, kept beside the checkpoints.

A read model is derived data: when a new labrxiv folds the same events into other rows
(a rule fixed, a count added), its `Projector.version` goes up, and a read model stored
at another version is dropped and replayed from the log (`ProjectionRunner.create_schema`).
A database built before versions were kept holds none: its read models count as version 1.
"""

from collections.abc import Mapping

from sqlalchemy import Column, Connection, Integer, String, Table, inspect, select
from sqlmodel import SQLModel

from events.upsert import insert_ignore, upsert

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
    rows = [{"name": name, "version": version} for name, version in sorted(versions.items())]
    if replace:
        conn.execute(upsert(conn, VERSIONS, rows))
    else:
        conn.execute(insert_ignore(conn, VERSIONS).values(rows))
