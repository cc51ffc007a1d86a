"""`labrxiv export …`: the log in the formats other tools read (docs/exports.md). This
module holds the group and `export preferences` (preference pairs from reviewed papers,
as JSONL for DPO training: docs/review.md, "Training data"); `inspect`, `finetune` and
`otel` are in their own modules. Each reads the read models and writes only its file
(or sends to its endpoint)."""

from functools import cache
from pathlib import Path

import typer
from rich.markup import escape

from labrxiv.cli_common import read_runner, settings_or_exit
from labrxiv.cli_errors import err, say_error
from labrxiv.cli_export_otel import export_otel
from labrxiv.cli_export_runs import export_finetune, export_inspect
from labrxiv.cli_group import command_group
from labrxiv.console import console
from labrxiv.errors import written
from labrxiv.lookup import resolve_campaign
from labrxiv.wiring import gym_dirs
from projections.preferences import preference_pairs
from workers.errors import BundleError
from workers.gym.registry import find_bundle

export_app = command_group("Data made from the log, for use elsewhere.", no_args_is_help=True)
export_app.command("inspect")(export_inspect)
export_app.command("finetune")(export_finetune)
export_app.command("otel")(export_otel)


@export_app.command("preferences")
def export_preferences(
    out: Path | None = typer.Option(None, "--out", "-o", help="The JSONL file (default: stdout)."),
    campaign: str | None = typer.Option(None, "--campaign", help="Only this campaign's papers."),
    task: str | None = typer.Option(None, "--task", help="Only papers on this task."),
) -> None:
    """For each task and cycle, the best-reviewed paper as `chosen` and the worst as
    `rejected` (CycleResearcher), one JSON object a line: `prompt`, `chosen`, `rejected`
    (the keys TRL's DPO trainer and OpenRLHF read), their scores and source events."""
    settings = settings_or_exit()
    dirs = gym_dirs(settings)

    @cache
    def prompt_of(task_id: str) -> str:
        try:
            goal = find_bundle(task_id, dirs).card.goal
        except BundleError:
            return f"Write a research paper on the task {task_id}."
        return f"Write a research paper on the task {task_id}. {goal}".strip()

    runner = read_runner()
    runner.catch_up()
    with runner.store.engine.connect() as conn:
        campaign = resolve_campaign(runner.store, conn, campaign)
        pairs, why, ties = preference_pairs(conn, prompt_of, campaign=campaign, task=task)
    lines = "".join(pair.model_dump_json() + "\n" for pair in pairs)
    if out is not None:
        with written(out):
            out.write_text(lines)
    elif lines:
        typer.echo(lines, nl=False)
    for tie in ties:
        err.print(f"[dim]{escape(tie)}[/]", soft_wrap=True)
    if why is not None:
        say_error(f"no preference pair: {why}")
    elif out is not None:
        console.print(f"{len(pairs)} preference pair(s) written to {out}", soft_wrap=True)
