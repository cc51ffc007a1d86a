"""Queue depth for Prometheus: the length of each labrxiv queue on Redis, at each scrape.

Read by the exporter from Redis itself, not counted by the workers: a queue that grows
because no worker consumes it has no worker to report it.
"""

import logging
from collections.abc import Iterator, Sequence

from prometheus_client.core import GaugeMetricFamily, Metric

log = logging.getLogger(__name__)

QUEUES = ("events", "steps", "reviews")
"""The queues labrxiv's tasks are routed to (`workers.handlers.HANDLERS`; a test checks)."""
PRIORITY_SEPARATOR = "\x06\x16"
"""kombu's Redis transport keeps a queue's messages of priority p > 0 in the list
`<queue>\\x06\\x16<p>`; the queue's depth is the sum of its lists."""
UNACKED = "unacked"
"""kombu's hash of messages delivered and not yet acknowledged (all queues)."""


class QueueCollector:
    """Messages waiting on each queue, and messages taken but not yet acknowledged."""

    def __init__(self, redis_url: str, queues: Sequence[str] = QUEUES) -> None:
        import redis

        self.client = redis.Redis.from_url(redis_url, socket_timeout=5, socket_connect_timeout=5)
        self.queues = list(queues)

    def describe(self) -> list[Metric]:
        """Nothing: registering the collector must not reach Redis."""
        return []

    def collect(self) -> Iterator[Metric]:
        """One round trip: every list's length and the unacked hash's size. Nothing while
        Redis is away: the scrape's other metrics (the read models') go on without these
        (a Redis down made the whole scrape an HTTP 500, found running labrxiv outside)."""
        import redis

        pipe = self.client.pipeline(transaction=False)
        for queue in self.queues:
            pipe.llen(queue)
            for priority in range(1, 10):
                pipe.llen(f"{queue}{PRIORITY_SEPARATOR}{priority}")
        pipe.hlen(UNACKED)
        try:
            lengths = pipe.execute()
        except redis.RedisError as exc:
            log.warning("queue depth not read, Redis is away: %s", exc)
            return
        depth = GaugeMetricFamily(
            "labrxiv_queue_messages",
            "Messages waiting on a queue (not yet delivered to a worker).",
            labels=["queue"],
        )
        for index, queue in enumerate(self.queues):
            depth.add_metric([queue], sum(lengths[index * 10 : index * 10 + 10]))
        yield depth
        yield GaugeMetricFamily(
            "labrxiv_queue_unacked_messages",
            "Messages delivered to a worker and not yet acknowledged (every queue).",
            value=lengths[-1],
        )
