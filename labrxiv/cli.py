"""The `labrxiv` command line: parses arguments, wires parts, prints; no domain logic."""

import os
import time
import uuid
from dataclasses import asdict
from pathlib import Path

import typer
from rich.table import Table

from labrxiv.cli_analyze import analyze
from labrxiv.cli_bounds import INT64_MAX, SEED_MAX, metrics_port_option
from labrxiv.cli_campaign import campaign, reap_command
from labrxiv.cli_common import (
    AsJson,
    GymPath,
    MetricsAddr,
    StallSeconds,
    emit_json,
    read_store,
    settings_or_exit,
    with_gym_path,
)
from labrxiv.cli_errors import ShellGroup, say_error
from labrxiv.cli_events import events_app
from labrxiv.cli_export import export_app
from labrxiv.cli_exporter import exporter
from labrxiv.cli_fork import fork
from labrxiv.cli_group import command_group
from labrxiv.cli_nav import campaigns, runs_app
from labrxiv.cli_read import curves, ledger, papers_app
from labrxiv.cli_replay import replay
from labrxiv.cli_resume import resume
from labrxiv.cli_reviewers import reviewers_app
from labrxiv.cli_serve import serve
from labrxiv.cli_tasks import tasks_app
from labrxiv.console import console
from labrxiv.demo_defaults import DEMO_TASK
from runstate.words import counted

# ShellGroup: an error a person can fix (no log, an unknown id, a server away) is one
# line and exit code 1 in every command, not a traceback.
app = command_group(
    "Autonomous research labs on an event-sourced log.",
    no_args_is_help=True,
    cls=ShellGroup,
)
app.add_typer(events_app, name="events")
app.add_typer(tasks_app, name="tasks")
app.command()(campaign)
app.command("reap")(reap_command)
app.command()(campaigns)
app.add_typer(runs_app, name="runs")
app.add_typer(papers_app, name="papers")
app.add_typer(reviewers_app, name="reviewers")
app.add_typer(export_app, name="export")
app.command()(analyze)
app.command()(ledger)
app.command()(curves)
app.command()(replay)
app.command()(fork)
app.command()(resume)
app.command()(exporter)
app.command()(serve)
DEFAULT_REPORT = Path("report")


@app.command()
def demo(
    labs: int | None = typer.Option(
        None,
        min=1,
        help="Labs per campaign (default: as the task's recorded effect was measured, else 3).",
        max=INT64_MAX,
    ),
    papers: int | None = typer.Option(
        None, min=1, help="Papers per lab (default: as measured, else 3).", max=INT64_MAX
    ),
    attempts: int | None = typer.Option(
        None,
        min=1,
        help="Graded attempts per lab (default: as measured, else the task card's).",
        max=INT64_MAX,
    ),
    seed: int = typer.Option(0, help="Seed of the labs.", max=SEED_MAX, min=0),
    task: str = typer.Option(DEMO_TASK, help="Built-in task to run."),
    report: Path = typer.Option(DEFAULT_REPORT, help="Folder for the report."),
    deterministic: bool = typer.Option(
        False,
        "--deterministic",
        help="Labs take turns, one step at a time: the same seed gives the same numbers.",
    ),
    gym_path: GymPath = None,
) -> None:
    """Isolated labs vs labs sharing an archive, on embedded defaults (no Redis, no API key).

    Exit codes as `campaign`'s: 1 when every run ended in error, 2 refused before any run."""
    from labrxiv.cli_checks import writable_folder_or_exit
    from labrxiv.cli_labs import check_task, require_sandbox
    from labrxiv.demo import run_demo
    from labrxiv.exit_codes import EXIT_INTERRUPTED
    from labrxiv.interrupt import Stopped, say_stopped

    settings = with_gym_path(settings_or_exit(), gym_path)
    # Checked as `campaign` checks it, before anything is written: an unknown task is one
    # line, not a traceback, and an llm-only one is refused rather than run to six errors.
    hint = ": the demo runs offline search labs; try `labrxiv campaign --policy llm`"
    check_task(settings, task, "search", hint=hint)
    writable_folder_or_exit("--report", report)  # not once both campaigns have run
    sandbox = require_sandbox(settings)

    try:
        result = run_demo(
            settings,
            console,
            task=task,
            labs=labs,
            papers=papers,
            attempts=attempts,
            seed=seed,
            report=report,
            deterministic=deterministic,
            sandbox=sandbox,
        )
    except Stopped as stopped:
        say_stopped(console, stopped.left)
        console.print(
            f"no report was written; the demo's data is in {settings.data_dir / 'demo'} "
            "(LABRXIV_DATA_DIR for `labrxiv resume` and the read commands)",
            soft_wrap=True,
        )
        raise typer.Exit(EXIT_INTERRUPTED) from None
    if result.failed:
        raise typer.Exit(1)


WORKER_QUEUES = ("events", "steps", "reviews")
"""The queues labrxiv's tasks are routed to (`workers.handlers.HANDLERS`; a test checks),
written out: importing the handlers here would import prometheus_client before a worker's
metrics are set up."""
WORKER_POOLS = ("prefork", "threads", "solo")
"""The Celery pools a worker runs on (eventlet and gevent are not installed)."""


@app.command()
def worker(
    queues: str = typer.Option(
        "events,steps,reviews", "--queues", "-Q", help="Comma-separated queues to consume."
    ),
    concurrency: int = typer.Option(
        1, "--concurrency", "-c", min=1, help="Processes or threads.", max=INT64_MAX
    ),
    pool: str = typer.Option("prefork", "--pool", "-P", help="prefork, threads or solo."),
    name: str | None = typer.Option(
        None,
        "--name",
        "-n",
        help="Node name, e.g. steps-1@%h (%h: the host). Default: labrxiv-<pid>-<random>@%h.",
    ),
    metrics_port: int | None = metrics_port_option("Serve this worker's metrics on this port."),
    metrics_addr: MetricsAddr = "0.0.0.0",
    metrics_dir: Path | None = typer.Option(
        None,
        "--metrics-dir",
        help="Folder the pool's processes count in (its *.db files removed at start). "
        "Default: one of the worker's own under LABRXIV_DATA_DIR/metrics, removed at exit.",
    ),
) -> None:
    """Run a Celery worker on Redis (needs LABRXIV_REDIS_URL)."""
    # Checked here, one line and exit 2: Celery took a misspelt queue silently (the worker
    # then consumed nothing of it and the runs stalled) and met a pool it cannot load
    # with a 200-line traceback (found running labrxiv from outside).
    named = [queue.strip() for queue in queues.split(",") if queue.strip()]
    if not named or set(named) - set(WORKER_QUEUES):
        say_error(f"--queues {queues!r}: labrxiv's queues are {', '.join(WORKER_QUEUES)}")
        raise typer.Exit(2)
    if pool not in WORKER_POOLS:
        say_error(f"--pool {pool!r}: one of {', '.join(WORKER_POOLS)}")
        raise typer.Exit(2)
    settings = settings_or_exit()
    if settings.redis_url is None:
        console.print("[red]LABRXIV_REDIS_URL is not set: a worker needs Redis[/]")
        raise typer.Exit(2)
    from labrxiv.service_start import ready, require_shared_database, start_or_exit

    require_shared_database(settings, "worker")
    start_or_exit(settings, redis=True)

    steps = "steps" in named  # lab steps run tools: which sandbox, or why none can run here
    if steps:
        from labrxiv.cli_labs import require_sandbox

        require_sandbox(settings, say=False)
    if metrics_port is not None:  # before the worker's modules import prometheus_client
        from labrxiv.cli_exporter import serve_worker_metrics

        serve_worker_metrics(metrics_port, metrics_addr, metrics_dir)
    from labrxiv.console import hand_logging_to_celery
    from labrxiv.wiring import celery_worker_app

    hand_logging_to_celery()
    # Celery names every worker celery@<host>: several on one host (or in containers
    # sharing a host name) would answer broadcasts under one name.
    name = name or f"labrxiv-{os.getpid()}-{uuid.uuid4().hex[:6]}@%h"
    app = celery_worker_app(settings)
    if steps:  # said once its broker answered: a worker that cannot start says only why
        from labrxiv.cli_labs import say_sandbox

        say_sandbox(settings)
    console.print(ready("worker", settings, f"queues {', '.join(named)}"), soft_wrap=True)
    app.worker_main(
        ["worker", "-Q", queues, "-c", str(concurrency), "-P", pool, "-n", name]
        + ["-l", settings.log_level]
    )


@app.command()
def projector(
    once: bool = typer.Option(False, help="Catch up once and exit."),
    poll: float = typer.Option(0.5, help="Seconds between polls when idle."),
    page: int = typer.Option(5000, min=1, help="Events applied per transaction.", max=INT64_MAX),
    otel_endpoint: str | None = typer.Option(
        None, "--otel-endpoint", help="Also send runs' spans to this OTLP/HTTP endpoint, live."
    ),
    metrics_port: int | None = metrics_port_option(
        "Serve the projector's metrics (its OpenTelemetry sink's) on this port."
    ),
    metrics_addr: MetricsAddr = "0.0.0.0",
) -> None:
    """Apply new events to the read models, following the log."""
    from labrxiv.cli_export_otel import open_sink, otlp_url, send_once
    from labrxiv.service_start import require_shared_database
    from labrxiv.wiring import open_runner

    settings = settings_or_exit()
    otel_url = None if otel_endpoint is None else otlp_url(otel_endpoint)
    require_shared_database(settings, "projector")
    if once and metrics_port is not None:
        raise typer.BadParameter(
            "is for a projector that follows the log, not --once", param_hint="'--metrics-port'"
        )
    if once:
        runner = open_runner(settings)
        runner.page = page
        console.print(f"applied {runner.catch_up()} events")
        if otel_url is not None:
            send_once(open_sink(runner.store, otel_url))
        return
    from labrxiv import projecting
    from labrxiv.service_start import ready, start_or_exit

    start_or_exit(settings, redis=False)  # it reads and writes the database only
    runner = open_runner(settings)
    runner.page = page
    sinks = [] if otel_url is None else [open_sink(runner.store, otel_url)]
    if metrics_port is not None:
        from labrxiv.cli_exporter import serve_projector_metrics

        serve_projector_metrics(metrics_port, metrics_addr, sinks)
    said = ready("projector", settings, f"polling every {poll:g} s", redis=False)
    console.print(said, soft_wrap=True)
    projecting.follow(runner, poll_seconds=poll, sinks=[sink.follow_step for sink in sinks])


@app.command()
def reactor(
    once: bool = typer.Option(False, help="Catch up once (and reap once) and exit."),
    interval: float | None = typer.Option(
        None, min=0.01, help="Seconds between looks at the log (LABRXIV_REACTOR_INTERVAL)."
    ),
    stall_seconds: StallSeconds = None,
    metrics_port: int | None = metrics_port_option("Serve the reaper's metrics on this port."),
) -> None:
    """Send what follows recorded events (runs' next steps, campaigns' ends) from the log,
    and send again the steps of runs that stalled (lost with Redis, or a killed worker)."""
    from labrxiv.reacting import open_reacting

    settings = settings_or_exit()
    if metrics_port is not None:
        from labrxiv.cli_exporter import serve_process_metrics

        serve_process_metrics(metrics_port)
    if settings.embedded:
        console.print("[red]the reactor sends steps to workers: set LABRXIV_REDIS_URL[/]")
        raise typer.Exit(2)
    if stall_seconds is not None:
        settings = settings.model_copy(update={"stall_seconds": stall_seconds})
    from labrxiv.service_start import ready, require_shared_database, start_or_exit

    require_shared_database(settings, "reactor")
    start_or_exit(settings, redis=True)
    reacting = open_reacting(settings)
    try:
        if once:
            sent = reacting.reactor.catch_up()
            reaped = reacting.reap()
            console.print(
                f"reacted to {counted(sent, 'event')}; sent {counted(reaped, 'stalled step')} again"
            )
            return
        every = interval or settings.reactor_interval
        console.print(
            ready("reactor", settings, f"stall after {settings.stall_seconds:g} s"),
            soft_wrap=True,
        )
        reacting.follow(every)
    finally:
        reacting.close()


@app.command()
def rebuild(
    jobs: int | None = typer.Option(
        None,
        min=1,
        help="Processes replaying the log, each for a share of the read models "
        "(PostgreSQL only; default on PostgreSQL: one a core, at most 2, once the log's "
        "head is at position 50,000; 1 on SQLite).",
        max=INT64_MAX,
    ),
) -> None:
    """Drop every read model and replay the log from position 0."""
    from projections.catalogue import all_projectors
    from projections.parallel_rebuild import OneWriter
    from projections.runner import ProjectionRunner

    # The log there is (a rebuild never starts a new, empty one); not `read_runner`, which
    # would first replay a stale read model that the rebuild then drops and replays again.
    store = read_store()
    damaged = store.first_damaged()  # found before any read model is dropped
    if damaged is not None:
        say_error(f"{damaged}: nothing rebuilt")
        raise typer.Exit(1)
    runner = ProjectionRunner(store, all_projectors())
    started = time.perf_counter()
    try:
        rebuilt = runner.rebuild(jobs)
    except OneWriter:
        console.print(
            f"[red]--jobs {jobs} needs PostgreSQL: a SQLite log takes one writer at a time, "
            "so its rebuild runs in one process (leave --jobs out)[/]",
            soft_wrap=True,
        )
        raise typer.Exit(2) from None
    except KeyboardInterrupt:
        from labrxiv.exit_codes import EXIT_INTERRUPTED

        console.print(
            "stopped: the read models are part-built (each up to the last page it "
            "committed); the next read command (`labrxiv runs`, `papers`…) or "
            "`labrxiv projector --once` goes on from there, `labrxiv rebuild` starts "
            "them over",
            soft_wrap=True,
        )
        raise typer.Exit(EXIT_INTERRUPTED) from None
    seconds = time.perf_counter() - started
    # Each read model replays the whole log: count the log's events once, not once each.
    events = runner.store.count()
    rate = events / seconds if seconds else 0.0
    shared = f" in {rebuilt.processes} processes" if rebuilt.processes > 1 else ""
    console.print(
        f"rebuilt {len(runner.projectors)} read models from {events} events "
        f"in {seconds:.2f}s{shared} ({rate:,.0f} events/s)"
    )


@app.command()
def status(as_json: AsJson = False) -> None:
    """Log size and positions, projector lag (and rebuilds not yet finished), dead letters."""
    from projections.catalogue import all_projectors
    from projections.runner import ProjectionRunner

    settings = settings_or_exit()
    # Not `read_runner`: what status shows is how far each read model is, rebuilds cut
    # short included, not a wait for them to finish.
    runner = ProjectionRunner(read_store(), all_projectors())
    store = runner.store
    database = store.engine.url.render_as_string(hide_password=True)
    bus = settings.redis_url or "embedded (in-process)"
    lags = runner.lag()
    letters = store.dead_letters(limit=5)
    if as_json:
        emit_json(
            {
                "database": database,
                "bus": bus,
                "events": store.count(),
                "head_position": store.max_position(),
                "projectors": {lag.name: asdict(lag) | {"behind": lag.behind} for lag in lags},
                "dead_letters": store.dead_letter_count(),
            }
        )
        return
    table = Table(title="labrxiv status")
    table.add_column("what")
    table.add_column("value")
    table.add_row("database", database)
    table.add_row("bus", bus)
    table.add_row("events", str(store.count()))
    table.add_row("head position", str(store.max_position()))
    for lag in lags:
        rebuilding = (
            f" (rebuilding from 0: whole again at {lag.rebuilding_to}; a read command "
            "or a projector finishes it)"
            if lag.rebuilding_to is not None
            else ""
        )
        table.add_row(
            f"projector {lag.name}", f"at {lag.checkpoint}, {lag.behind} behind{rebuilding}"
        )
    table.add_row("dead letters", str(store.dead_letter_count()))
    console.print(table)
    for letter in letters:
        console.print(
            f"[yellow]dead letter {letter.id}[/] {letter.received_at:%H:%M:%S}: {letter.reason}"
        )


if __name__ == "__main__":
    app()
