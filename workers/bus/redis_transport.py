"""kombu's Redis transport, with one Redis client per channel instead of one per command.

kombu 5.7's Redis channel builds a new `redis.Redis` for every publish, every ack and
every message it takes (`Channel.conn_or_acquire` without a client), and redis-py 8
fills a table of about 200 response callbacks in each. On the LLM labs' path that was
a tenth of a steps worker's CPU (py-spy, 50 labs). A client is safe to share between
threads (each command borrows a connection from the pool), so each channel keeps one,
made again when the channel's pool is replaced after a disconnect.
"""

from collections.abc import Iterator
from contextlib import contextmanager

import redis
from kombu.transport import redis as kombu_redis


class Channel(kombu_redis.Channel):
    """A Redis channel that reuses its synchronous client."""

    _shared: redis.Redis | None = None

    @contextmanager
    def conn_or_acquire(self, client: redis.Redis | None = None) -> Iterator[redis.Redis]:
        if client:
            yield client
            return
        shared = self._shared
        if shared is None or shared.connection_pool is not self.pool:
            shared = self._shared = self._create_client()
        yield shared


class Transport(kombu_redis.Transport):
    """kombu's Redis transport on `Channel`."""

    Channel = Channel
