"""`labrxiv exporter` (research and system metrics over HTTP), `labrxiv worker
--metrics-port` (a worker's own metrics) and `labrxiv projector --metrics-port` (its
OpenTelemetry sink's): wiring and serving only; the metrics are
`projections.metrics`, `projections.lag_metrics`, `workers.queue_metrics`,
`workers.metrics` and `workers.metrics_serve` (docs/metrics.md)."""

import atexit
import os
import shutil
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from labrxiv.cli_bounds import INT64_MAX
from labrxiv.cli_common import settings_or_exit
from labrxiv.console import console
from labrxiv.settings import Settings
from projections.metric_bounds import Bounds

if TYPE_CHECKING:  # imported lazily below, so `labrxiv --help` stays fast
    from prometheus_client import CollectorRegistry

    from projections.exports.otel_sink import OtelSink

EXPORTER_PORT = 9810
"""`labrxiv exporter`'s default port (docs/metrics.md lists every port)."""


def exporter(
    port: int = typer.Option(EXPORTER_PORT, min=0, max=65535, help="Port to serve /metrics on."),
    addr: str = typer.Option("0.0.0.0", help="Address to listen on."),
    runs: int = typer.Option(
        Bounds.runs, min=0, help='Runs shown one by one (the rest: run="other").', max=INT64_MAX
    ),
    campaigns: int = typer.Option(
        Bounds.campaigns, min=0, help="Campaigns shown one by one.", max=INT64_MAX
    ),
    labs: int = typer.Option(
        Bounds.labs, min=0, help='Labs shown one by one (the rest: lab="other").', max=INT64_MAX
    ),
    models: int = typer.Option(
        Bounds.models, min=0, help="Models shown one by one (the rest: other).", max=INT64_MAX
    ),
    once: bool = typer.Option(False, "--once", help="Print one scrape on stdout and exit."),
) -> None:
    """Serve research metrics (read from the read models at each scrape), projection lag,
    queue depth and this process's own metrics in the Prometheus format."""
    from prometheus_client import generate_latest, start_http_server

    settings = settings_or_exit()
    registry = exporter_registry(settings, Bounds(runs, campaigns, labs, models))
    if once:
        typer.echo(generate_latest(registry).decode(), nl=False)
        return
    try:
        server, _ = start_http_server(port, addr=addr, registry=registry)
    except OSError as exc:
        console.print(f"[red]cannot listen on {addr}:{port}: {exc.strerror}[/]")
        raise typer.Exit(2) from None
    console.print(f"serving metrics on http://{addr}:{server.server_port}/metrics")
    threading.Event().wait()  # the server is a daemon thread: wait until Ctrl-C or a signal


def exporter_registry(settings: Settings, bounds: "Bounds") -> "CollectorRegistry":
    """A registry of every collector the exporter serves."""
    from prometheus_client import CollectorRegistry, PlatformCollector, ProcessCollector

    from labrxiv.reading import find_log, open_log
    from labrxiv.wiring import open_runner
    from projections.lag_metrics import LagCollector
    from projections.metrics import ResearchCollector

    # A database server of a deployment may hold no log yet (the exporter starting first);
    # a SQLite log must exist, as for every read command: the exporter made an empty
    # `.labrxiv/labrxiv.db` wherever it was started.
    store = None if settings.database_url is not None else open_log(find_log(settings).settings)
    runner = open_runner(settings, store)
    runner.create_schema()  # a read model not built yet reads as empty, not as an error
    engine = runner.store.engine
    registry = CollectorRegistry()
    registry.register(ResearchCollector(engine, bounds))
    registry.register(LagCollector(engine, [p.name for p in runner.projectors]))
    if settings.redis_url is not None:
        from workers.queue_metrics import QueueCollector

        registry.register(QueueCollector(settings.redis_url))
    ProcessCollector(registry=registry)
    PlatformCollector(registry=registry)
    return registry


def serve_worker_metrics(port: int, addr: str, folder: Path | None) -> None:
    """Count this worker's processes in `folder` (by default a folder of its own under
    the data directory; metric files left there removed first) and serve their sum on
    `addr:port`. Called before anything imports prometheus_client
    (`workers.metrics_serve.use_folder`)."""
    from workers.metrics_serve import TooLate, serve, use_folder

    settings = settings_or_exit()
    if folder is None:  # ours alone: removed when the worker exits (not after a SIGKILL)
        folder = settings.data_dir / "metrics" / f"worker-{os.getpid()}"
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
    try:
        use_folder(folder.resolve())
        port = serve(port, addr)
        from workers.metrics import metrics

        metrics()  # made now: unlabelled counters are exported at 0 before their first count
    except TooLate as exc:
        raise RuntimeError(f"worker metrics: {exc}") from None
    except OSError as exc:
        console.print(f"[red]cannot serve worker metrics on {addr}:{port}: {exc}[/]")
        raise typer.Exit(2) from None
    console.print(f"worker metrics on http://{addr}:{port}/metrics (counted in {folder})")


def serve_projector_metrics(port: int, addr: str, sinks: "list[OtelSink]") -> None:
    """Serve `labrxiv projector`'s metrics on `addr:port`: its live OpenTelemetry sinks'
    counters and lag (`projections.exports.otel_metrics`), and its process's."""
    from prometheus_client import REGISTRY, disable_created_metrics, start_http_server

    from projections.exports.otel_metrics import SinkLag, spans_sent, spans_skipped

    disable_created_metrics()
    spans_sent(), spans_skipped()  # made now: exported at 0 before their first count
    for sink in sinks:
        REGISTRY.register(SinkLag(sink))
    port = _served(start_http_server, port, addr)
    console.print(f"projector metrics on http://{addr}:{port}/metrics", soft_wrap=True)


def serve_process_metrics(port: int, addr: str = "0.0.0.0") -> None:
    """Serve this (single) process's metrics on `addr:port`: `labrxiv reactor`'s reaper."""
    from prometheus_client import disable_created_metrics, start_http_server

    from workers.metrics import metrics

    disable_created_metrics()  # a `_created` series per counter: nothing reads them
    metrics()  # made now: unlabelled counters are exported at 0 before their first count
    port = _served(start_http_server, port, addr)
    console.print(f"reaper metrics on http://{addr}:{port}/metrics", soft_wrap=True)


def _served(start: Callable[..., tuple[Any, Any]], port: int, addr: str) -> int:
    """Start prometheus_client's server (`start`) on `addr:port`; returns the port served
    (the one the system chose, for port 0). A port that cannot be had ends the command
    in one line."""
    try:
        server, _ = start(port, addr=addr)
    except OSError as exc:
        console.print(f"[red]cannot serve metrics on {addr}:{port}: {exc.strerror}[/]")
        raise typer.Exit(2) from None
    return int(server.server_port)
