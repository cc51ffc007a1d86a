"""`labrxiv campaigns`, `labrxiv runs` and `labrxiv runs show RUN`: from a campaign to its
runs to one run, with the ids each table prints accepted by the next command."""

import typer

from labrxiv.cli_common import AsJson, emit_json, read_runner, show_listing
from labrxiv.cli_group import command_group
from labrxiv.console import console
from labrxiv.errors import NotFound
from labrxiv.lookup import resolve_campaign, resolve_run
from labrxiv.read_shapes import run_show_json, runs_json
from labrxiv.run_detail import run_detail
from labrxiv.views import campaigns_table, run_view, runs_table
from projections.campaigns import campaign_modes, campaigns_of
from projections.runs import runs_of

runs_app = command_group(
    "The runs read model: every run (`--campaign` narrows), or one (`show RUN`).",
    invoke_without_command=True,
)


def campaigns(as_json: AsJson = False) -> None:
    """Every campaign: id, task, mode, policy, labs, status, best score, start."""
    runner = read_runner()
    with runner.store.engine.connect() as conn:
        found = campaigns_of(conn)
    none = "no campaign in the log yet: `labrxiv campaign` or `labrxiv demo` runs one"
    show_listing(as_json, found, lambda: found, lambda: campaigns_table(found), none)


@runs_app.callback()
def runs(
    ctx: typer.Context,
    campaign: str | None = typer.Option(None, help="Only this campaign's runs (an id prefix)."),
    as_json: AsJson = False,
) -> None:
    """The runs read model: status, events, steps, attempts, papers, best score, times."""
    if ctx.invoked_subcommand is not None:
        return
    runner = read_runner()
    with runner.store.engine.connect() as conn:
        campaign = resolve_campaign(runner.store, conn, campaign)
        rows = runs_of(conn, campaign=campaign)
        modes = campaign_modes(conn)
    if campaign is not None and not rows:
        raise NotFound(f"campaign {campaign} has no run in the runs read model yet")
    none = "no run yet (`labrxiv projector --once` catches the read models up)"
    show_listing(
        as_json, rows, lambda: runs_json(rows, modes), lambda: runs_table(rows, modes), none
    )


@runs_app.command("show")
def runs_show(
    run: str = typer.Argument(..., help="The run: run-<campaign>-<lab> or a prefix of it."),
    as_json: AsJson = False,
) -> None:
    """One run: campaign and mode, how it ended, its events by type, attempts, papers."""
    runner = read_runner()
    with runner.store.engine.connect() as conn:
        stream = resolve_run(conn, run)
        (view,) = runs_of(conn, streams=[stream])
        mode = campaign_modes(conn).get(view.campaign or "")
        detail = run_detail(runner.store, conn, view)
    if as_json:
        emit_json(run_show_json(view, mode, detail))
        return
    console.print(run_view(view, mode, detail))
