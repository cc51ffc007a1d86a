"""The Redis broker channel keeps one client for its commands instead of one per command."""

from kombu import Connection, Exchange, Queue

from workers.app import make_celery
from workers.bus.redis_transport import Channel, Transport


def test_labrxiv_celery_apps_use_the_transport_for_redis_urls(redis_url: str) -> None:
    app = make_celery(redis_url, visibility_timeout=60)
    with app.connection_for_write() as connection:
        assert isinstance(connection.default_channel, Channel)


def test_one_client_serves_publishes_acks_and_gets_until_the_pool_is_replaced(
    redis_url: str,
) -> None:
    """Messages still travel (published, taken, acknowledged, none left unacked), all
    through one client; after a disconnect replaces the channel's connection pool the
    next command gets a client on the new pool."""
    queue = Queue("transport-test", Exchange("transport-test"), "transport-test")
    with Connection(redis_url, transport=Transport) as connection:
        channel = connection.channel()
        producer = connection.Producer(channel)
        for i in range(3):
            producer.publish({"n": i}, exchange=queue.exchange, routing_key="transport-test",
                             declare=[queue], serializer="json")  # fmt: skip
        first = channel._shared
        assert first is not None
        got = []
        for _ in range(3):
            message = queue(channel).get(no_ack=False)
            assert message is not None
            got.append(message.payload["n"])
            message.ack()
        assert got == [0, 1, 2]
        assert channel._shared is first
        with channel.conn_or_acquire() as client:
            assert client is first
            assert client.hlen(channel.unacked_key) == 0

        channel._disconnect_pools()
        producer.publish({"n": 3}, exchange=queue.exchange, routing_key="transport-test")
        assert channel._shared is not first
        assert channel._shared.connection_pool is channel.pool
        message = queue(channel).get(no_ack=True)
        assert message is not None and message.payload == {"n": 3}
