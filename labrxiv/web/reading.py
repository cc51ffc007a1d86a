"""What every route reads through: the log's store (held by the app), one database
connection per request, the page asked for, and JSON in the CLI's shapes."""

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Query, Request, Response
from sqlalchemy import Connection

from events import EventStore
from labrxiv.read_shapes import json_bytes

PER_PAGE = 50
"""Rows a listing shows by default."""
MAX_PER_PAGE = 500


class BadQuery(Exception):
    """A query the server cannot answer as asked (a page past the last, a filter that
    names nothing): a 400 with this message."""


def store_of(request: Request) -> EventStore:
    """The log the app serves."""
    store: EventStore = request.app.state.store
    return store


def connection(request: Request) -> Iterator[Connection]:
    """A connection to the log's database for one request, closed after it."""
    with store_of(request).engine.connect() as conn:
        yield conn


Conn = Annotated[Connection, Depends(connection)]
Store = Annotated[EventStore, Depends(store_of)]


@dataclass(frozen=True)
class Paging:
    """Which page of a listing: 1 is the first."""

    page: int
    per_page: int

    @property
    def offset(self) -> int:
        return (self.page - 1) * self.per_page

    def check(self, total: int) -> None:
        """`BadQuery` for a page past the last one (page 1 of nothing is an empty page)."""
        if self.page > 1 and self.offset >= total:
            raise BadQuery(f"page {self.page} is past the last page ({self.pages(total)})")

    def pages(self, total: int) -> int:
        """How many pages `total` rows make (at least 1)."""
        return max(1, -(-total // self.per_page))


def paging(
    page: int = Query(1, ge=1, le=1_000_000_000, description="The page, 1 first."),
    per_page: int = Query(PER_PAGE, ge=1, le=MAX_PER_PAGE, description="Rows a page."),
) -> Paging:
    """The page a listing's query asks for."""
    return Paging(page, per_page)


Page = Annotated[Paging, Depends(paging)]


def json_response(value: object, total: int | None = None) -> Response:
    """`value` as the CLI's `--json` prints it (compact); with `total`, a listing's page,
    the count of all its rows in `X-Total-Count`."""
    headers = {} if total is None else {"X-Total-Count": str(total)}
    return Response(json_bytes(value, indent=False), media_type="application/json", headers=headers)
