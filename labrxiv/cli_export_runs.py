"""`labrxiv export inspect` and `labrxiv export finetune`: a run's or a campaign's runs
as an Inspect AI eval log and as fine-tuning JSONL (docs/exports.md). Both read the
read models and the log (`projections.exports`, imported when a command runs); they
write the file only."""

import math
from pathlib import Path
from typing import TYPE_CHECKING

import orjson
import typer
from sqlalchemy import Connection

from events import EventStore
from events.streams import stream_id
from labrxiv.cli_common import read_runner
from labrxiv.console import console
from labrxiv.errors import NotFound, written
from labrxiv.lookup import resolve_campaign, resolve_run
from projections.runner import ProjectionRunner
from projections.runs import runs_of

if TYPE_CHECKING:
    from projections.exports.runs import ExportedRun

VERDICTS = ("PASS", "SUSPICIOUS", "FAIL")
RUN_HELP = "One run: run-<campaign>-<lab> or a prefix of it."
CAMPAIGN_HELP = "Every run of this campaign (an id or a prefix of one)."


def export_inspect(
    out: Path = typer.Option(..., "--out", "-o", help="The .eval file to write."),
    run: str | None = typer.Option(None, "--run", help=RUN_HELP),
    campaign: str | None = typer.Option(None, "--campaign", help=CAMPAIGN_HELP),
) -> None:
    """The runs as an Inspect AI eval log: one sample per run with its messages, events,
    model usage, best score and verdict (open it with `inspect view`)."""
    from projections.exports.inspect_log import write_eval

    if out.suffix != ".eval":  # Inspect reads a `.json` log as JSON, and opens no other
        raise typer.BadParameter(
            f"{out.name}: Inspect opens a log by its ending and this one is written in "
            f"the .eval format: name the file {out.stem or 'logs'}.eval",
            param_hint="'--out'",
        )
    runner, name, runs = _runs(run, campaign)
    with written(out):
        write_eval(out, name, runs, runner.store.get_blob)
    console.print(f"{len(runs)} sample(s) written to {out}", soft_wrap=True)


def export_finetune(
    out: Path = typer.Option(..., "--out", "-o", help="The JSONL file to write."),
    run: str | None = typer.Option(None, "--run", help=RUN_HELP),
    campaign: str | None = typer.Option(None, "--campaign", help=CAMPAIGN_HELP),
    verdict: list[str] = typer.Option(
        [], "--verdict", help="Only runs with this verdict (PASS, SUSPICIOUS, FAIL; repeatable)."
    ),
    min_score: float | None = typer.Option(
        None,
        "--min-score",
        help="Only runs whose best score reaches this (at most this, for a minimized raw score).",
    ),
) -> None:
    """The runs' conversations in OpenAI's chat fine-tuning format, one run a line:
    `{"messages": [...], "tools": [...]}`."""
    from projections.exports.finetune import example_of, kept

    wanted = {v.upper() for v in verdict}
    unknown = sorted(wanted - set(VERDICTS))
    if unknown:
        raise typer.BadParameter(
            f"no verdict {', '.join(unknown)} (one of {', '.join(VERDICTS)})",
            param_hint="'--verdict'",
        )
    if min_score is not None and not math.isfinite(min_score):
        raise typer.BadParameter("must be a finite number", param_hint="'--min-score'")
    _, _, runs = _runs(run, campaign)
    examples = [example_of(r) for r in kept(runs, wanted, min_score)]
    lines = b"".join(orjson.dumps(e) + b"\n" for e in examples if e is not None)
    with written(out):
        out.write_bytes(lines)
    examples_written = lines.count(b"\n")
    console.print(f"{examples_written} of {len(runs)} run(s) written to {out}", soft_wrap=True)


def _runs(
    run: str | None, campaign: str | None
) -> tuple[ProjectionRunner, str, list["ExportedRun"]]:
    """The read runner (caught up), the eval's name and the runs `--run` or `--campaign`
    names."""
    from projections.exports.runs import exported_runs

    if (run is None) == (campaign is None):
        raise typer.BadParameter("give --run or --campaign (one of them)")
    runner = read_runner()
    runner.catch_up()
    store = runner.store
    with store.engine.connect() as conn:
        streams, name = _streams(store, conn, run, campaign)
        return runner, name, exported_runs(store, conn, streams, _tool_schemas())


def _streams(
    store: EventStore, conn: Connection, run: str | None, campaign: str | None
) -> tuple[list[str], str]:
    if run is not None:
        stream = resolve_run(conn, run)
        (view,) = runs_of(conn, streams=[stream])
        return [stream], view.campaign or stream_id(stream)
    found = resolve_campaign(store, conn, campaign)
    assert found is not None
    streams = [view.stream for view in runs_of(conn, campaign=found)]
    if not streams:
        raise NotFound(f"campaign {found} has no run")
    return streams, found


def _tool_schemas() -> dict[str, dict[str, object]]:
    """Every tool's declaration as labrxiv's tools declare it to models (for runs that
    called no model); imported here, not at start-up, as only these commands need them."""
    from workers.tools import invoke  # noqa: F401 - declares every tool
    from workers.tools.base import TOOLS

    return {name: spec.schema() for name, spec in TOOLS.items()}
