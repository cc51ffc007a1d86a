"""Rich renderings of read models and log entries, shared by CLI commands."""

from collections.abc import Sequence

import orjson
from rich.table import Table
from sqlalchemy import select

from events import EventStore
from events.recorded import Recorded
from projections.runs import RUNS


def runs_table(store: EventStore, title: str = "runs") -> Table:
    """The runs read model as a table."""
    table = Table(title=title)
    for name in ("run", "lab", "policy", "status", "events", "attempts", "best", "first", "last"):
        table.add_column(name)
    with store.engine.connect() as conn:
        rows = conn.execute(select(RUNS).order_by(RUNS.c.stream)).mappings().all()
    for row in rows:
        status = row["status"] + (f" ({row['finish_reason']})" if row["finish_reason"] else "")
        best = "-" if row["best_score"] is None else f"{row['best_score']:.3f}"
        table.add_row(
            row["stream"],
            row["lab"] or "-",
            row["policy"] or "-",
            status,
            str(row["event_count"]),
            str(row["attempts"]),
            best,
            f"{row['first_event_at']:%H:%M:%S}" if row["first_event_at"] else "-",
            f"{row['last_event_at']:%H:%M:%S}" if row["last_event_at"] else "-",
        )
    return table


def events_table(records: Sequence[Recorded]) -> Table:
    """Log entries, one line each with a payload summary."""
    table = Table()
    for name in ("pos", "stream", "v", "type", "occurred", "actor", "payload"):
        table.add_column(name, overflow="fold")
    for r in records:
        summary = orjson.dumps({k: v for k, v in r.payload.items() if k != "type"}).decode()
        table.add_row(
            str(r.position),
            r.stream,
            str(r.version),
            r.type,
            f"{r.occurred_at:%Y-%m-%d %H:%M:%S}",
            r.actor or "-",
            summary[:120] + ("…" if len(summary) > 120 else ""),
        )
    return table


def table_rows(store: EventStore, table_name: str) -> list[tuple[object, ...]]:
    """Every row of a read-model table in primary-key order (to compare two builds)."""
    table = RUNS.metadata.tables[table_name]
    with store.engine.connect() as conn:
        return [tuple(r) for r in conn.execute(select(table).order_by(*table.primary_key.columns))]
