"""Rich renderings of read models and log entries, shared by CLI commands."""

from collections.abc import Sequence

import orjson
from rich.table import Table
from sqlalchemy import select

from events import EventStore
from events.recorded import Recorded
from projections.runs import RUNS, runs_of


def runs_table(store: EventStore, title: str = "runs") -> Table:
    """The runs read model as a table."""
    table = Table(title=title)
    for name in (
        "run",
        "lab",
        "policy",
        "status",
        "events",
        "steps",
        "attempts",
        "papers",
        "best",
        "first",
        "last",
    ):
        table.add_column(name)
    with store.engine.connect() as conn:
        runs = runs_of(conn)
    for run in runs:
        status = run.status + (f" ({run.finish_reason})" if run.finish_reason else "")
        table.add_row(
            run.stream,
            run.lab or "-",
            run.policy or "-",
            status,
            str(run.event_count),
            str(run.steps),
            str(run.attempts),
            str(run.papers),
            "-" if run.best_score is None else f"{run.best_score:.3f}",
            f"{run.first_event_at:%H:%M:%S}" if run.first_event_at else "-",
            f"{run.last_event_at:%H:%M:%S}" if run.last_event_at else "-",
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
