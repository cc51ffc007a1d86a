"""The `labrxiv` command line: parses arguments, wires parts, prints; no domain logic."""

import logging
import os
import time
import uuid
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from labrxiv.cli_campaign import campaign, reap_command
from labrxiv.cli_read import curves, ledger, papers_app
from labrxiv.cli_tasks import tasks_app
from labrxiv.settings import Settings, SettingsError, load_settings
from labrxiv.views import events_table, runs_table

app = typer.Typer(help="Autonomous research labs on an event-sourced log.", no_args_is_help=True)
events_app = typer.Typer(help="Read the event log.", no_args_is_help=True)
app.add_typer(events_app, name="events")
app.add_typer(tasks_app, name="tasks")
app.command()(campaign)
app.command("reap")(reap_command)
app.add_typer(papers_app, name="papers")
app.command()(ledger)
app.command()(curves)
console = Console()
DEFAULT_REPORT = Path("report")


def _settings() -> Settings:
    try:
        settings = load_settings()
    except SettingsError as exc:
        console.print(f"[red]{exc}[/]")
        raise typer.Exit(2) from None
    logging.basicConfig(
        level=settings.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    return settings


@app.command()
def demo(
    labs: int = typer.Option(3, min=1, help="Labs per campaign."),
    papers: int = typer.Option(3, min=1, help="Papers per lab."),
    attempts: int = typer.Option(9, min=1, help="Graded attempts per lab."),
    seed: int = typer.Option(0, help="Seed of the labs."),
    task: str = typer.Option("continual-digits", help="Built-in task to run."),
    report: Path = typer.Option(DEFAULT_REPORT, help="Folder for the report."),
) -> None:
    """Isolated labs vs labs sharing an archive, on embedded defaults (no Redis, no API key)."""
    from labrxiv.cli_campaign import require_sandbox
    from labrxiv.demo import run_demo

    require_sandbox()

    run_demo(
        _settings(),
        console,
        task=task,
        labs=labs,
        papers=papers,
        attempts=attempts,
        seed=seed,
        report=report,
    )


@app.command()
def worker(
    queues: str = typer.Option(
        "events,steps", "--queues", "-Q", help="Comma-separated queues to consume."
    ),
    concurrency: int = typer.Option(1, "--concurrency", "-c", min=1, help="Processes or threads."),
    pool: str = typer.Option("prefork", "--pool", "-P", help="prefork, threads or solo."),
    name: str | None = typer.Option(
        None,
        "--name",
        "-n",
        help="Node name, e.g. steps-1@%h (%h: the host). Default: labrxiv-<pid>-<random>@%h.",
    ),
) -> None:
    """Run a Celery worker on Redis (needs LABRXIV_REDIS_URL)."""
    from labrxiv.wiring import celery_worker_app

    settings = _settings()
    if settings.redis_url is None:
        console.print("[red]LABRXIV_REDIS_URL is not set: a worker needs Redis[/]")
        raise typer.Exit(2)
    # Celery names every worker celery@<host>: several on one host (or in containers
    # sharing a host name) then answer broadcasts under one name (issue 12).
    name = name or f"labrxiv-{os.getpid()}-{uuid.uuid4().hex[:6]}@%h"
    celery_worker_app(settings).worker_main(
        ["worker", "-Q", queues, "-c", str(concurrency), "-P", pool, "-n", name]
        + ["-l", settings.log_level]
    )


@app.command()
def projector(
    once: bool = typer.Option(False, help="Catch up once and exit."),
    poll: float = typer.Option(0.5, help="Seconds between polls when idle."),
    page: int = typer.Option(5000, min=1, help="Events applied per transaction."),
) -> None:
    """Apply new events to the read models, following the log."""
    from labrxiv.wiring import open_runner

    runner = open_runner(_settings())
    runner.page = page
    if once:
        console.print(f"applied {runner.catch_up()} events")
        return
    runner.follow(poll_seconds=poll)


@app.command()
def reactor(
    once: bool = typer.Option(False, help="Catch up once (and reap once) and exit."),
    interval: float | None = typer.Option(
        None, min=0.01, help="Seconds between looks at the log (LABRXIV_REACTOR_INTERVAL)."
    ),
    stall_seconds: float | None = typer.Option(
        None,
        "--stall-seconds",
        min=0.001,
        help="A run with no event for this long and no step being taken has lost its step "
        "(LABRXIV_STALL_SECONDS, 30).",
    ),
) -> None:
    """Send what follows recorded events (runs' next steps, campaigns' ends) from the log,
    and send again the steps of runs that stalled (lost with Redis, or a killed worker)."""
    from labrxiv.reacting import open_reacting

    settings = _settings()
    if settings.embedded:
        console.print("[red]the reactor sends steps to workers: set LABRXIV_REDIS_URL[/]")
        raise typer.Exit(2)
    if stall_seconds is not None:
        settings = settings.model_copy(update={"stall_seconds": stall_seconds})
    reacting = open_reacting(settings)
    try:
        if once:
            sent = reacting.reactor.catch_up()
            console.print(f"reacted to {sent} events; sent {reacting.reap()} stalled steps again")
            return
        reacting.follow(interval or settings.reactor_interval)
    finally:
        reacting.close()


@app.command()
def rebuild() -> None:
    """Drop every read model and replay the log from position 0."""
    from labrxiv.wiring import open_runner

    runner = open_runner(_settings())
    started = time.perf_counter()
    runner.rebuild()
    seconds = time.perf_counter() - started
    # Each read model replays the whole log: count the log's events once, not once each.
    events = runner.store.count()
    rate = events / seconds if seconds else 0.0
    console.print(
        f"rebuilt {len(runner.projectors)} read models from {events} events "
        f"in {seconds:.2f}s ({rate:,.0f} events/s)"
    )


@app.command()
def status() -> None:
    """Log size and positions, projector lag, dead letters."""
    from labrxiv.wiring import open_runner

    settings = _settings()
    runner = open_runner(settings)
    store = runner.store
    table = Table(title="labrxiv status")
    table.add_column("what")
    table.add_column("value")
    table.add_row("database", store.engine.url.render_as_string(hide_password=True))
    table.add_row("bus", settings.redis_url or "embedded (in-process)")
    table.add_row("events", str(store.count()))
    table.add_row("head position", str(store.max_position()))
    for lag in runner.lag():
        table.add_row(f"projector {lag.name}", f"at {lag.checkpoint}, {lag.behind} behind")
    table.add_row("dead letters", str(store.dead_letter_count()))
    console.print(table)
    for letter in store.dead_letters(limit=5):
        console.print(
            f"[yellow]dead letter {letter.id}[/] {letter.received_at:%H:%M:%S}: {letter.reason}"
        )


@app.command()
def runs() -> None:
    """The runs read model."""
    from labrxiv.wiring import open_runner

    runner = open_runner(_settings())
    runner.create_schema()  # before any projector ran there is no table: show it empty
    console.print(runs_table(runner.store))


@events_app.command("tail")
def events_tail(
    after: int = typer.Option(0, help="Start after this position (0: from the start)."),
    limit: int = typer.Option(20, min=1, help="Events to show (the last ones unless --after)."),
    stream: str | None = typer.Option(None, help="Only this stream."),
    follow: bool = typer.Option(False, "--follow", "-f", help="Keep printing new events."),
) -> None:
    """Print events in position order."""
    from labrxiv.wiring import open_store

    store = open_store(_settings())
    if after == 0 and not follow:
        after = max(0, store.max_position() - limit) if stream is None else 0
    while True:
        records = store.read_records(after=after, limit=limit, stream=stream)
        if records:
            console.print(events_table(records))
            after = records[-1].position
        if not follow:
            return
        if not records:
            time.sleep(0.5)


@events_app.command("show")
def events_show(event_id: str = typer.Argument(..., help="The event's id.")) -> None:
    """Print one event in full, as JSON."""
    from labrxiv.wiring import open_store

    try:
        key = uuid.UUID(event_id)
    except ValueError:
        console.print(f"[red]{event_id!r} is not an event id (a UUID)[/]")
        raise typer.Exit(2) from None
    event = open_store(_settings()).get(key)
    if event is None:
        console.print(f"[red]no event {event_id}[/]")
        raise typer.Exit(1)
    console.print_json(event.model_dump_json())


@events_app.command("dead")
def events_dead(limit: int = typer.Option(20, min=1)) -> None:
    """Print the most recent dead letters with their reasons."""
    from labrxiv.wiring import open_store

    for letter in open_store(_settings()).dead_letters(limit=limit):
        console.print(
            f"[yellow]{letter.id}[/] {letter.received_at:%Y-%m-%d %H:%M:%S} {letter.reason}"
        )
        console.print(f"  {letter.raw[:300]}")


if __name__ == "__main__":
    app()
