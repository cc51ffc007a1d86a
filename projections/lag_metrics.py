"""Projection lag for Prometheus, read from the log and the checkpoints at each scrape.

Read by the exporter, not counted by the projector process: a projector that died or
hangs is exactly when its lag matters, and a dead process reports nothing.
"""

from collections.abc import Iterator, Sequence
from datetime import UTC, datetime

from prometheus_client.core import GaugeMetricFamily, Metric
from sqlalchemy import Engine, func, inspect, select

from events.envelope import as_utc
from events.store import EVENTS
from projections.checkpoints import CHECKPOINTS


class LagCollector:
    """Each projector's lag behind the head of the log, in events and in seconds."""

    def __init__(self, engine: Engine, projectors: Sequence[str]) -> None:
        self.engine = engine
        self.projectors = list(projectors)
        """The names of the projectors (a fixed set: the shipped read models)."""

    def describe(self) -> list[Metric]:
        """Nothing: registering the collector must not query the database."""
        return []

    def collect(self) -> Iterator[Metric]:
        """The head of the log, and each projector's lag behind it."""
        with self.engine.connect() as conn:
            head = conn.execute(select(func.coalesce(func.max(EVENTS.c.position), 0))).scalar_one()
            stored: dict[str, int] = {}
            if inspect(conn).has_table(CHECKPOINTS.name):
                query = select(CHECKPOINTS.c.name, CHECKPOINTS.c.position)
                stored = {name: position for name, position in conn.execute(query)}
            events = GaugeMetricFamily(
                "labrxiv_projection_lag_events",
                "Log positions a projector has not applied yet (head minus checkpoint).",
                labels=["projector"],
            )
            seconds = GaugeMetricFamily(
                "labrxiv_projection_lag_seconds",
                "Age of the oldest event a projector has not applied yet (0 when caught up).",
                labels=["projector"],
            )
            now = datetime.now(UTC)
            for name in sorted(self.projectors):
                checkpoint = stored.get(name, 0)
                events.add_metric([name], max(0, head - checkpoint))
                oldest = conn.execute(
                    select(EVENTS.c.recorded_at)
                    .where(EVENTS.c.position > checkpoint)
                    .order_by(EVENTS.c.position)
                    .limit(1)
                ).scalar()
                age = (now - as_utc(oldest)).total_seconds() if oldest is not None else 0.0
                seconds.add_metric([name], max(0.0, age))
        yield GaugeMetricFamily(
            "labrxiv_log_head_position", "The position of the last event in the log.", value=head
        )
        yield events
        yield seconds
