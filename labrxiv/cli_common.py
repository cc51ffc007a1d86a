"""What the read commands share: settings, the log they read (never a new one), JSON, listings."""

from collections.abc import Callable, Sequence, Sized
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import RenderableType

from events import EventStore
from labrxiv.cli_errors import err, say_error
from labrxiv.console import configure_logging, console
from labrxiv.read_shapes import json_bytes
from labrxiv.reading import find_log, open_log
from labrxiv.settings import Settings, SettingsError, load_settings
from projections.catalogue import all_projectors
from projections.runner import ProjectionRunner

AsJson = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]
"""The `--json` flag of every command that prints a table or a view."""

MetricsAddr = Annotated[str, typer.Option("--metrics-addr", help="Address for metrics.")]
"""The address a service's `--metrics-port` listens on (`worker`, `projector`)."""

StallSeconds = Annotated[
    float | None,
    typer.Option(
        "--stall-seconds",
        min=0.001,
        help="A run with no event for this long and no step being taken has lost its step, "
        "which is sent again (default: LABRXIV_STALL_SECONDS, 30).",
    ),
]
"""The option of every command that sends stalled runs' steps again (`settings.stall_seconds`
when not given)."""

WatchTimeout = Annotated[
    float,
    typer.Option(
        "--timeout",
        min=0.001,
        help="Seconds to watch; then, in embedded mode, the work stops as at Ctrl-C "
        "(resume goes on).",
    ),
]
"""The option of every command that watches runs until they finish (`campaign`, `fork`,
`resume`)."""

GYM_PATH_HELP = (
    "A further folder of task bundles (or a bundle); repeatable. Added to "
    "LABRXIV_GYM_PATH (a JSON list, e.g. '[\"/data/tasks\"]')."
)
GymPath = Annotated[list[Path] | None, typer.Option("--gym-path", help=GYM_PATH_HELP)]
"""The option of every command that names a task (or runs a task's steps)."""


def with_gym_path(settings: Settings, gym_path: list[Path] | None) -> Settings:
    """`settings` with the `--gym-path` folders after LABRXIV_GYM_PATH's, so everything the
    command does with them (checks, embedded workers) finds the same bundles."""
    if not gym_path:
        return settings
    return settings.model_copy(update={"gym_path": [*settings.gym_path, *gym_path]})


def settings_or_exit() -> Settings:
    """The settings from the environment; a wrong value is one line and exit code 2."""
    try:
        settings = load_settings()
    except SettingsError as exc:
        say_error(str(exc))
        raise typer.Exit(2) from None
    # Library INFO lines (httpx2's per request) stay off the console unless DEBUG, and log
    # lines go through the stderr console, above a live table.
    configure_logging(settings.log_level)
    return settings


def open_found_log(settings: Settings) -> tuple[Settings, EventStore]:
    """The log `settings` name, or the demo's (said on stderr), with the settings that
    name it; never a new one."""
    found = find_log(settings)
    if found.note:
        err.print(f"[dim]{found.note}[/]")
    return found.settings, open_log(found.settings)


def read_store() -> EventStore:
    """The log the settings name, or the demo's (said on stderr); never a new one."""
    return open_found_log(settings_or_exit())[1]


def read_runner() -> ProjectionRunner:
    """A projection runner over the log read commands read, every read model's table
    present (before any projector ran there are none: they are shown empty). A read model
    being rebuilt is finished first (said on stderr), not shown half-built or empty: one
    an older labrxiv stored (`create_schema` drops it), or one whose rebuild was cut
    short."""
    runner = ProjectionRunner(read_store(), all_projectors())
    runner.finish_rebuilds(announced=runner.create_schema())
    return runner


def emit_json(value: Any) -> None:
    """`value` as indented JSON on stdout (dataclasses, datetimes and UUIDs included)."""
    typer.echo(json_bytes(value).decode())


def show_listing(
    as_json: bool,
    found: Sized,
    rows: Callable[[], Sequence[Any]],
    table: Callable[[], RenderableType],
    none: str,
) -> None:
    """A listing command's output for what it `found`: its `rows` (the JSON shape) as
    JSON, `[]` when there are none; else its `table`, or, when nothing was found, the
    line `none` saying why. Only the shape shown is built."""
    if as_json:
        emit_json(rows())
    elif not found:
        console.print(none)
    else:
        console.print(table())
