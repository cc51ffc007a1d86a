"""The Celery broker for each Redis URL labrxiv accepts (`redis://`, `rediss://` with TLS,
`unix://` for a socket), every one on labrxiv's Redis transport.

Celery hands the URL to kombu, whose forms are not redis-py's: kombu has no `unix`
transport (its Redis channel takes a socket as `socket://`, its database as
`virtual_host`), and it took `rediss://` to its stock transport with certificates not
checked (CERT_NONE, with a warning). So `unix://` failed at the first connection ("No
such transport: unix"), and a TLS deployment lost what `workers.bus.redis_transport`
adds (the gate before kombu parses an item, one client per channel) and checked no
certificate. Here each form keeps that transport, and `rediss://` checks the server's
certificate as redis-py does for the same URL (`ssl_cert_reqs=required` unless the URL's
own `ssl_*` parameters say otherwise, which kombu reads).
"""

import ssl
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from workers.bus.redis_transport import Transport


class SocketTransport(Transport):
    """The transport on a Unix socket: kombu's Redis channel reads a `socket://` URL
    itself (path, `virtual_host`, credentials) when the transport says it parses URLs."""

    can_parse_url = True


@dataclass(frozen=True)
class Broker:
    """What Celery is given for one broker URL."""

    url: str
    transport: type[Transport] | None
    """None: the one Celery picks by the URL's scheme."""
    ssl: dict[str, Any] | None
    """`broker_use_ssl` (None: no TLS)."""


def broker(url: str) -> Broker:
    """The broker for `url`: a Redis URL the settings accept on labrxiv's transport; any
    other (`memory://`, which tests use) as Celery takes it."""
    scheme = urlsplit(url).scheme
    if scheme == "unix":
        return Broker(_socket_url(url), SocketTransport, None)
    if scheme == "rediss":
        return Broker(url, Transport, {"ssl_cert_reqs": ssl.CERT_REQUIRED})
    if scheme == "redis":
        return Broker(url, Transport, None)
    return Broker(url, None, None)


def _socket_url(redis_url: str) -> str:
    """redis-py's `unix:///path?db=N` as kombu's `socket:///path?virtual_host=N`."""
    parts = urlsplit(redis_url)
    query = [("virtual_host" if k == "db" else k, v) for k, v in parse_qsl(parts.query)]
    query_text = f"?{urlencode(query)}" if query else ""
    return f"socket://{parts.netloc}{parts.path}{query_text}"
