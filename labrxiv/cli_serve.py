"""`labrxiv serve`: the archive, campaigns and runs in a browser, and the JSON API
(`labrxiv.web`), on the log the read commands read."""

import socket

import typer

from labrxiv.cli_common import read_runner
from labrxiv.console import console
from labrxiv.errors import CannotServe


def serve(
    host: str = typer.Option("127.0.0.1", help="The address to listen on."),
    port: int = typer.Option(8000, min=1, max=65535, help="The port to listen on."),
) -> None:
    """Serve the archive, campaigns and runs as web pages and a JSON API (/api/v1, its
    schema at /openapi.json), read-only: nothing is appended to the log."""
    import uvicorn

    from labrxiv.web.app import create_app

    runner = read_runner()
    store = runner.store
    listening = _listen(host, port)
    shown = store.engine.url.render_as_string(hide_password=True)
    where = f"[{host}]" if ":" in host else host or "0.0.0.0"
    console.print(
        f"serving {shown} on http://{where}:{port}/ (read-only; Ctrl-C stops)", soft_wrap=True
    )
    config = uvicorn.Config(create_app(store), log_level="warning")
    uvicorn.Server(config).run(sockets=[listening])


def _listen(host: str, port: int) -> socket.socket:
    """A socket listening on `host`:`port`, bound before anything says it serves; one
    that cannot be bound (the port taken, below 1024 for a normal user, an address this
    machine does not have) is a one-line `CannotServe`."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET  # as uvicorn binds
    listening = socket.socket(family, socket.SOCK_STREAM)
    try:
        listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listening.bind((host, port))
        listening.listen(2048)
    except OSError as exc:
        listening.close()
        raise CannotServe(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    return listening
