"""kombu's Redis transport, with one Redis client per channel instead of one per command,
and a gate on every item taken off a list.

One client: kombu 5.7's Redis channel builds a new `redis.Redis` for every publish,
every ack and every message it takes (`Channel.conn_or_acquire` without a client), and
redis-py 8 fills a table of about 200 response callbacks in each. On the LLM labs' path
that was a tenth of a steps worker's CPU (py-spy, 50 labs). A client is safe to share
between threads (each command borrows a connection from the pool), so each channel
keeps one, made again when the channel's pool is replaced after a disconnect.

The gate: kombu parses a popped item inline (`Channel._brpop_read` and `_get` call
`loads(bytes_to_str(item))`), and an item it cannot read stops the worker.
There is no kombu hook between the pop and the parse, but the item arrives as the
reply of the client's BRPOP or RPOP, and redis-py lets a client transform a command's
reply (`Redis.set_response_callback`, public API). Each client this channel makes
gets a callback on those two commands that passes the item through `gate.admit`, so
kombu only ever parses a message it can deliver (workers/bus/gate.py). The cost is a
second read of each envelope (JSON and base64) in the worker's main process: ~10 ms
for a 2 MB batch of 3,000 events, whose recording takes ~120 ms in the pool.
`_create_client` is kombu's private factory of those clients, already relied on above.
"""

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from typing import Any

import redis
from kombu.transport import redis as kombu_redis
from kombu.utils.encoding import bytes_to_str

from workers.bus.gate import admit, is_unreadable


class Channel(kombu_redis.Channel):
    """A Redis channel that reuses its synchronous client and admits only readable items."""

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

    def _create_client(self, asynchronous: bool = False) -> redis.Redis:
        client = super()._create_client(asynchronous)
        for command in ("BRPOP", "RPOP"):
            previous = client.response_callbacks.get(command)
            client.set_response_callback(command, partial(self._admitted, command, previous))
        return client

    def _admitted(
        self, command: str, previous: Callable[..., Any] | None, response: Any, **options: Any
    ) -> Any:
        """The reply of BRPOP (list name, item) or RPOP (item), its item admitted."""
        if previous is not None:
            response = previous(response, **options)
        if not response:
            return response
        if command == "BRPOP":
            key, item = response
            return key, admit(item, self._queue_of(key))
        if isinstance(response, bytes):
            return admit(response, "")  # RPOP does not say which list: `_get` fills it in
        return response

    def _queue_of(self, key: bytes) -> str:
        """The queue a BRPOP key belongs to, as kombu's `_brpop_read` names it."""
        name = bytes_to_str(key)
        prefix = self.global_keyprefix
        if prefix and name.startswith(prefix):
            name = name[len(prefix) :]
        return name.rsplit(self.sep, 1)[0]

    def _get(self, queue: str, timeout: float | None = None) -> dict[str, Any]:
        # `timeout`: the virtual channel's signature; Redis's channel takes none.
        payload = super()._get(queue)
        if is_unreadable(payload):
            payload["properties"]["delivery_info"]["routing_key"] = queue
        return payload


class Transport(kombu_redis.Transport):
    """kombu's Redis transport on `Channel`."""

    Channel = Channel
