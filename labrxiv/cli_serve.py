"""`labrxiv serve`: the archive, campaigns and runs in a browser, and the JSON API
(`labrxiv.web`), on the log the read commands read."""

import typer

from labrxiv.cli_common import read_runner
from labrxiv.console import make_console

console = make_console()


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
    shown = store.engine.url.render_as_string(hide_password=True)
    console.print(
        f"serving {shown} on http://{host}:{port}/ (read-only; Ctrl-C stops)", soft_wrap=True
    )
    uvicorn.run(create_app(store), host=host, port=port, log_level="warning")
