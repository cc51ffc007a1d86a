"""Every Redis URL the settings accept reaches Redis through labrxiv's transport:
`unix://` (a socket; kombu has no such transport) and `rediss://` (TLS; kombu took it to
its stock transport, certificates unchecked), each on a redis-server of the test's own."""

import shutil
import ssl
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest
import redis
from kombu import Exchange, Producer, Queue

from tests.needs import missing
from tests.ports import free_port
from workers.app import make_celery
from workers.bus.broker import Broker, SocketTransport, broker
from workers.bus.redis_transport import Channel, Transport

PROBE = Queue("probe", Exchange("probe"), "probe")


def test_each_form_of_url_maps_to_the_transport_and_its_options() -> None:
    unix = broker("unix:///run/redis/redis.sock?db=3")
    assert unix == broker("unix:///run/redis/redis.sock?db=3")
    assert (unix.url, unix.transport, unix.ssl) == (
        "socket:///run/redis/redis.sock?virtual_host=3",
        SocketTransport,
        None,
    )
    tls = broker("rediss://cache.example:6380/2")
    assert (tls.url, tls.transport) == ("rediss://cache.example:6380/2", Transport)
    assert tls.ssl == {"ssl_cert_reqs": ssl.CERT_REQUIRED}
    assert broker("redis://127.0.0.1:6379/0").ssl is None
    assert broker("memory://") == Broker("memory://", None, None)  # Celery's own choice


def test_a_unix_socket_url_reaches_its_database_on_labrxivs_transport() -> None:
    with tempfile.TemporaryDirectory(prefix="lr-", dir="/tmp") as folder:  # short: a socket path
        sock = Path(folder) / "redis.sock"
        check = redis.Redis(unix_socket_path=str(sock), db=2)
        with _redis_server(["--port", "0", "--unixsocket", str(sock)], Path(folder), check):
            _publish_one(f"unix://{sock}?db=2")
            assert check.llen("probe") == 1  # in database 2, where the URL said
            _take_one(f"unix://{sock}?db=2")
            assert check.llen("probe") == 0
        check.close()


def test_a_tls_url_checks_the_certificate_on_labrxivs_transport() -> None:
    if shutil.which("openssl") is None:
        missing("openssl is not installed (Debian: apt-get install openssl)")
    with tempfile.TemporaryDirectory(prefix="lr-") as name:
        folder = Path(name)
        cert, key = folder / "cert.pem", folder / "key.pem"
        subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"]
            + ["-keyout", str(key), "-out", str(cert), "-subj", "/CN=127.0.0.1"]
            + ["-addext", "subjectAltName=IP:127.0.0.1"],
            check=True,
            capture_output=True,
        )
        for _ in range(5):  # a free port can be taken before the server binds it: another
            port = free_port()
            tls = ["--port", "0", "--tls-port", str(port), "--tls-auth-clients", "no"]
            tls += ["--tls-cert-file", str(cert), "--tls-key-file", str(key)]
            tls += ["--tls-ca-cert-file", str(cert)]
            check = redis.Redis(host="127.0.0.1", port=port, db=3, ssl=True, ssl_ca_certs=str(cert))
            try:
                with _redis_server(tls, folder, check):
                    url = f"rediss://127.0.0.1:{port}/3?ssl_ca_certs={cert}"
                    _publish_one(url)
                    assert check.llen("probe") == 1
                    _take_one(url)
                    assert check.llen("probe") == 0
                    # Without the certificate's authority the connection is refused, not
                    # made unchecked: the server's certificate is self-signed.
                    with pytest.raises(Exception, match="CERTIFICATE_VERIFY_FAILED"):
                        _publish_one(f"rediss://127.0.0.1:{port}/3")
                return
            except _PortTaken:
                continue
            finally:
                check.close()
        pytest.fail("five free ports were each taken before redis-server could bind them")


def _publish_one(url: str) -> None:
    """Publish one message to queue `probe` through a labrxiv Celery app on `url`, checking
    its channel is labrxiv's."""
    app = make_celery(url, visibility_timeout=60)
    with app.connection_for_write() as connection:
        connection.ensure_connection(max_retries=1)
        channel = connection.default_channel
        assert isinstance(channel, Channel)
        Producer(channel).publish(
            {"n": 1}, exchange=PROBE.exchange, routing_key="probe", declare=[PROBE]
        )


def _take_one(url: str) -> None:
    """Take the message `_publish_one` left, through a labrxiv Celery app on `url` (its
    channel's gate reads the item first), and acknowledge it."""
    app = make_celery(url, visibility_timeout=60)
    with app.connection_for_write() as connection:
        message = PROBE(connection.default_channel).get(no_ack=False)
        assert message is not None and message.payload == {"n": 1}
        message.ack()


class _PortTaken(Exception):
    """redis-server could not bind its port: something took it first."""


@contextmanager
def _redis_server(args: Sequence[str], folder: Path, check: redis.Redis) -> Iterator[None]:
    """A redis-server with `args`, its files in `folder`, up once its log says it is ready
    (it bound its port itself: nothing else answers there) and `check` gets an answer;
    `_PortTaken` if its port was taken first."""
    binary = shutil.which("redis-server")
    if binary is None:
        missing("redis-server is not installed (Debian: apt-get install redis-server)")
    assert binary is not None
    log = folder / "redis.log"
    log.unlink(missing_ok=True)  # an earlier attempt's
    server = subprocess.Popen(
        [binary, *args, "--save", "", "--appendonly", "no", "--dir", str(folder)]
        + ["--logfile", str(log)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 10
        while "ready to accept connections" not in (said := _read(log)).lower():
            if server.poll() is not None:
                if "Address already in use" in said:
                    raise _PortTaken(said[-2000:])
                pytest.fail(f"redis-server exited at start: {said[-2000:]}")
            if time.monotonic() > deadline:
                pytest.fail(f"redis-server was not ready within 10 s: {said[-2000:]}")
            time.sleep(0.05)
        check.ping()
        yield
    finally:
        server.terminate()
        server.wait(timeout=10)


def _read(log: Path) -> str:
    try:
        return log.read_text()
    except FileNotFoundError:
        return ""
