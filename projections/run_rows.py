"""Read models folded a run at a time: a page's rows are taken out, folded into, put back.

A projector whose rows are keyed by run stream (runs, curves, behaviour, ledger) applies a
page in one sequence: group the page's events as its fold wants them, take the stored
rows they touch out of the table (`DELETE … RETURNING`: one round trip, not a select and
a delete), fold the page into them, and insert them all again. Rows of runs born in the
page cannot be stored yet (`projections.bulk`): they are neither looked up nor deleted.
A row is a fold of its run's events so far (counts, latest values, running totals, a
tally), so folding a run's events in pages of any size gives the same rows (`rebuild`
must equal them).
"""

from abc import abstractmethod
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any, Generic, TypeVar, cast

from pydantic_core import PydanticUndefined
from sqlalchemy import (
    ARRAY,
    ColumnElement,
    Connection,
    Table,
    bindparam,
    delete,
    func,
    select,
    tuple_,
)
from sqlmodel import SQLModel

from events.envelope import as_utc
from events.recorded import Recorded
from events.streams import RUN_PREFIX
from projections.bulk import born_streams, insert_rows
from projections.projector import Projector

Key = TypeVar("Key", str, tuple[str, str])
"""A row's primary key: its run stream, or the stream and the row's id within the run."""
Page = TypeVar("Page")
"""A page's events as a projector's fold wants them."""
Row = dict[str, Any]
Written = Sequence[tuple[Table, Sequence[Mapping[str, Any]]]]
"""What a fold writes: rows by table, inserted in that order."""


def blank_row(model: type[SQLModel]) -> Row:
    """The row a new run starts from: every column of the table `model` at its default
    (None where it has none). Copy it for each run: a copy costs less than building it."""
    return {
        name: None if field.default is PydanticUndefined else field.default
        for name, field in model.model_fields.items()
    }


class RunRowsProjector(Projector, Generic[Page, Key]):
    """A projector that folds each page into the stored rows of the runs it touches."""

    table: Table
    """The rows folded from page to page, keyed by the table's primary key, whose first
    column is the run stream."""
    kept: Sequence[str] | None = None
    """The columns of a stored row the fold goes on from (None: every column)."""
    aware: Sequence[str] = ()
    """Time columns given to the fold aware (SQLite reads them back naive)."""

    def apply(self, conn: Connection, events: Sequence[Recorded]) -> None:
        """Group the page, take out the stored rows it touches, fold, write back."""
        grouped = self.group(conn, events)
        if grouped is None:
            return
        page, keys = grouped
        born = born_streams(events)
        keys = sorted({k for k in keys if _run(k) not in born})
        stored = take_stored(conn, self.table, keys, self.kept, self.aware)
        for table, rows in self.fold(conn, page, stored):
            insert_rows(conn, table, rows)

    @abstractmethod
    def group(
        self, conn: Connection, events: Sequence[Recorded]
    ) -> tuple[Page, Collection[Key]] | None:
        """The page's events as the fold wants them and the keys of the rows they touch;
        None when the page has nothing for this read model."""

    @abstractmethod
    def fold(self, conn: Connection, page: Page, stored: dict[Key, Row]) -> Written:
        """Fold `page` into `stored` (the rows it touches that were stored, by key; the
        others are made by the fold) and return every row to write."""


def _run(key: str | tuple[str, str]) -> str:
    return key if isinstance(key, str) else key[0]


def by_run(
    events: Iterable[Recorded], others: list[Recorded] | None = None
) -> dict[str, list[Recorded]]:
    """The events of run streams by stream, in log order; the other events are added to
    `others` when it is given."""
    runs: dict[str, list[Recorded]] = {}
    for event in events:
        group = runs.get(event.stream)
        if group is None:
            if not event.stream.startswith(RUN_PREFIX):
                if others is not None:
                    others.append(event)
                continue
            group = runs[event.stream] = []
        group.append(event)
    return runs


def take_stored(
    conn: Connection,
    table: Table,
    keys: list[Key],
    kept: Sequence[str] | None = None,
    aware: Sequence[str] = (),
) -> dict[Key, Row]:
    """Delete the stored rows of `keys` and return them, by key: their `kept` columns
    (None: all), the times in `aware` made aware (once a row, not once an event)."""
    if not keys:
        return {}
    key = [column.name for column in table.primary_key.columns]
    returned = table.c if kept is None else [table.c[name] for name in kept]
    query = delete(table).where(_keys_in(conn, table, key, keys)).returning(*returned)
    rows: dict[Key, Row] = {}
    for row in conn.execute(query).mappings():
        values = dict(row)
        for name in aware:
            if values[name] is not None:
                values[name] = as_utc(values[name])
        stored = values[key[0]] if len(key) == 1 else tuple(values[n] for n in key)
        rows[cast(Key, stored)] = values
    return rows


def _keys_in(
    conn: Connection, table: Table, key: list[str], keys: list[Key]
) -> ColumnElement[bool]:
    """The table's key is among `keys`, in a form each database plans well."""
    if len(key) == 1:
        return table.c[key[0]].in_(keys)
    pair = tuple_(*(table.c[name] for name in key))
    if conn.dialect.name != "postgresql":
        return pair.in_(keys)
    # PostgreSQL planned a row-value IN list of a page's ~3,000 pairs as a filter over
    # the table: 340 ms a page to select, 260 ms to delete (bench/rebuild.py). Array
    # parameters unnested side by side are joined on the primary key instead.
    arrays = [
        bindparam(f"{table.name}_{name}", [k[i] for k in keys], type_=ARRAY(table.c[name].type))
        for i, name in enumerate(key)
    ]
    return pair.in_(select(*(func.unnest(array) for array in arrays)))
