"""The log's tables: events, blobs and dead letters (SQLModel, SQLite or PostgreSQL)."""

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Column,
    DateTime,
    Index,
    Integer,
    LargeBinary,
    Table,
    Text,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.sql.elements import ColumnElement
from sqlmodel import Field, SQLModel

# SQLite only auto-increments an INTEGER PRIMARY KEY; PostgreSQL gets a bigserial.
PositionType = BigInteger().with_variant(Integer(), "sqlite")
JsonType = JSON().with_variant(JSONB(), "postgresql")


class EventRow(SQLModel, table=True):
    """One stored event; `position` is the global order, assigned on append."""

    __tablename__ = "events"
    __table_args__ = (Index("ix_events_stream_version", "stream", "version", unique=True),)

    position: int | None = Field(
        default=None, sa_column=Column(PositionType, primary_key=True, autoincrement=True)
    )
    id: uuid.UUID = Field(unique=True, nullable=False)
    stream: str = Field(max_length=200, nullable=False)
    version: int = Field(nullable=False)
    type: str = Field(max_length=80, nullable=False, index=True)
    schema_version: int = Field(nullable=False)
    occurred_at: datetime = Field(sa_column=Column(DateTime(timezone=True), nullable=False))
    recorded_at: datetime = Field(sa_column=Column(DateTime(timezone=True), nullable=False))
    causation_id: uuid.UUID | None = Field(default=None)
    correlation_id: str | None = Field(default=None, max_length=200, index=True)
    actor: str | None = Field(default=None, max_length=200)
    payload: dict[str, Any] = Field(sa_column=Column(JsonType, nullable=False))


class BlobRow(SQLModel, table=True):
    """Content-addressed bytes (full tool output, paper bodies, prompts)."""

    __tablename__ = "blobs"

    sha256: str = Field(primary_key=True, max_length=64)
    size: int = Field(nullable=False)
    data: bytes = Field(sa_column=Column(LargeBinary, nullable=False))


class DeadLetterRow(SQLModel, table=True):
    """A message or event the recorder could not append, kept with the reason."""

    __tablename__ = "dead_letters"

    id: int | None = Field(default=None, primary_key=True)
    received_at: datetime = Field(sa_column=Column(DateTime(timezone=True), nullable=False))
    reason: str = Field(sa_column=Column(Text, nullable=False))
    raw: str = Field(sa_column=Column(Text, nullable=False))
    event_id: str | None = Field(default=None, max_length=64)
    stream: str | None = Field(default=None, max_length=200)


def table_of(model: type[SQLModel]) -> Table:
    """The table of a SQLModel table class: its `__table__`, which SQLModel sets when the
    class is made but does not declare to a type checker."""
    table: Table = model.__table__  # type: ignore[attr-defined]
    return table


def text_limit(column: ColumnElement[Any]) -> int:
    """The most characters a bounded text column (`max_length`) holds."""
    length = getattr(column.type, "length", None)  # String's, and SQLModel's AutoString's
    if not isinstance(length, int):
        raise TypeError(f"{column} is not a bounded text column")
    return length


LOG_TABLES = [table_of(EventRow), table_of(BlobRow), table_of(DeadLetterRow)]
