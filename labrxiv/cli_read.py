"""`labrxiv papers`, `labrxiv ledger`, `labrxiv curves`: the archive, ledger and curve read models.

They read the read models as the projector left them (`labrxiv projector` keeps them
current; `labrxiv projector --once` catches up once) and never write the log.
"""

import enum
from dataclasses import asdict
from pathlib import Path

import typer
from rich.markup import escape
from sqlalchemy import Connection

from labrxiv.cli_bounds import INT64_MAX
from labrxiv.cli_common import (
    AsJson,
    GymPath,
    emit_json,
    read_runner,
    settings_or_exit,
    show_listing,
    with_gym_path,
)
from labrxiv.cli_errors import err
from labrxiv.cli_group import command_group
from labrxiv.console import console
from labrxiv.errors import NotFound
from labrxiv.lookup import resolve_campaign, resolve_paper
from labrxiv.read_shapes import curves_json, marks_of, paper_json, papers_json
from labrxiv.views_read import (
    ledger_table,
    paper_view,
    papers_table,
    reviews_view,
    search_table,
    top_table,
)
from projections.archive import claim_marks, get_paper, list_papers
from projections.archive_pages import PaperFilter
from projections.archive_search import search_page
from projections.archive_top import ranked_as_measured, recorded_direction, top_papers
from projections.campaigns import campaign_modes
from projections.curves import curve_points, paper_points, renamed
from projections.ledger import RollUp, ledger_totals
from projections.ledger_labs import ledger_by_lab
from projections.reviews import any_reviews, decisions_of, reviews_of
from projections.runs import best_directions
from workers.errors import BundleError
from workers.gym.registry import find_bundle

papers_app = command_group(
    "The paper archive (AgentRxiv): list, show, search, top.", no_args_is_help=True
)


class RollUpBy(enum.StrEnum):
    """What the ledger is rolled up by."""

    run = "run"
    lab = "lab"
    campaign = "campaign"


class LinesBy(enum.StrEnum):
    """What one line of a curve stands for."""

    lab = "lab"
    campaign = "campaign"


class Direction(enum.StrEnum):
    """Whether a higher or a lower claimed value is better."""

    maximize = "maximize"
    minimize = "minimize"


CAMPAIGN_HELP = "Only this campaign (its id or a prefix of it)."


@papers_app.command("list")
def papers_list(
    task: str | None = typer.Option(None, help="Only papers on this task."),
    campaign: str | None = typer.Option(None, help=CAMPAIGN_HELP),
    lab: str | None = typer.Option(None, help="Only papers of this lab."),
    as_json: AsJson = False,
) -> None:
    """Every paper in the archive, in submission order, with whether the log verifies its
    headline claim."""
    runner = read_runner()
    with runner.store.engine.connect() as conn:
        campaign = resolve_campaign(runner.store, conn, campaign)
        papers = list_papers(conn, task=task, campaign=campaign, lab=lab)
        ids = [p.paper_id for p in papers]
        marks = marks_of(conn, ids)
        reviewed = bool(marks.decisions) or any_reviews(conn)
    if not papers and (task or campaign or lab):
        asked = [f"on task {task}" if task else "", f"by lab {lab}" if lab else ""]
        asked.append(f"of campaign {campaign}" if campaign else "")
        raise NotFound(f"no paper {' '.join(a for a in asked if a)} in the archive")
    shown = marks.decisions if reviewed else None  # no review columns without reviews
    show_listing(
        as_json,
        papers,
        lambda: papers_json(papers, marks),
        lambda: papers_table(
            papers, {i: marks.verified(i) for i in ids}, f"papers ({len(papers)})", shown
        ),
        "no paper in the archive yet",
    )


@papers_app.command("show")
def papers_show(
    paper_id: str = typer.Argument(..., help="The paper's archive id, or a prefix of it."),
    as_json: AsJson = False,
) -> None:
    """One paper in full: claims (verified against the grader's scores), method, citations,
    who cited and who retrieved it, its reviews and decision, body."""
    runner = read_runner()
    with runner.store.engine.connect() as conn:
        paper_id = resolve_paper(conn, paper_id)
        detail = get_paper(conn, paper_id)
        reviews = reviews_of(conn, paper_id)
        decided = decisions_of(conn, [paper_id]).get(paper_id)
        verified = [c.verified for c in claim_marks(conn, [paper_id])[paper_id]]
    assert detail is not None
    if as_json:
        emit_json(paper_json(detail, verified, reviews, decided))
        return
    console.print(paper_view(detail, verified, reviews_view(reviews, decided)))


@papers_app.command("search")
def papers_search(
    words: list[str] = typer.Argument(..., help="Words to look for (no quotes needed)."),
    task: str | None = typer.Option(None, help="Only papers on this task."),
    campaign: str | None = typer.Option(None, help=CAMPAIGN_HELP),
    k: int = typer.Option(10, "-k", min=1, help="How many papers.", max=INT64_MAX),
    as_json: AsJson = False,
) -> None:
    """Full-text search (BM25 over title, abstract and body), best match first."""
    query = " ".join(words)
    runner = read_runner()
    with runner.store.engine.connect() as conn:
        campaign = resolve_campaign(runner.store, conn, campaign)
        # A campaign is not a filter of the ranking (BM25's corpus is the task's or the
        # archive's): it chooses among the hits.
        hits = search_page(conn, query, PaperFilter(task=task, campaign=campaign), 0, k).hits
    if not hits:
        where = f" in campaign {campaign}" if campaign else ""
        raise NotFound(f"no paper matches {query!r}{where}")
    if as_json:
        emit_json(hits)
        return
    console.print(search_table(hits, query))


@papers_app.command("top")
def papers_top(
    task: str = typer.Argument(..., help="The task."),
    k: int = typer.Option(10, "-k", min=1, help="How many papers.", max=INT64_MAX),
    subtask: str | None = typer.Option(None, help="Rank by this subtask (default: headline)."),
    direction: Direction | None = typer.Option(
        None,
        help="Which way is better (default: the direction the log recorded for the subtask).",
    ),
    campaign: str | None = typer.Option(None, help=CAMPAIGN_HELP),
    verified_only: bool = typer.Option(
        False, "--verified-only", help="Rank only claims the log verifies."
    ),
    as_json: AsJson = False,
    gym_path: GymPath = None,
) -> None:
    """The task's papers with the best results, each marked verified or not (the claim
    is the grader's score of the attempt it names, recorded before the paper): shown and
    ranked by the grader's value where verified, by the claimed number where not."""
    runner = read_runner()
    with runner.store.engine.connect() as conn:
        campaign = resolve_campaign(runner.store, conn, campaign)
        way, note = (direction, None) if direction else _direction(conn, task, subtask, gym_path)
        claimed = top_papers(
            conn, task, k=None, subtask=subtask, direction=way.value, campaign=campaign
        )
        if not claimed:
            raise NotFound(_none_claimed(conn, task, subtask, campaign))
        ranked = ranked_as_measured(conn, claimed, way.value, verified_only=verified_only, k=k)
    if as_json:
        emit_json({"task": task, "direction": way.value, "papers": [asdict(r) for r in ranked]})
        return
    if note:
        err.print(f"[dim]{escape(note)}[/]")
    console.print(top_table(ranked, task))


def _none_claimed(conn: Connection, task: str, subtask: str | None, campaign: str | None) -> str:
    """Why no paper of the task (and campaign) has a claim on the subtask to rank by."""
    if not list_papers(conn, task=task):
        return f"no paper on task {task} in the archive"
    if campaign is None or not top_papers(conn, task, k=1, subtask=subtask):
        return f"no claim on subtask {subtask} in the papers on task {task}"
    return f"no paper on task {task} in campaign {campaign}"


def _direction(
    conn: Connection, task: str, subtask: str | None, gym_path: list[Path] | None
) -> tuple[Direction, str | None]:
    """Which way the subtask (the headline claims' for None) is better: as the papers'
    events recorded it from the card; else (papers submitted before directions were
    recorded) as the task card here says; else maximize, with a note."""
    recorded = recorded_direction(conn, task, subtask)
    if recorded is not None:
        return Direction(recorded), None
    try:
        card = find_bundle(task, with_gym_path(settings_or_exit(), gym_path).gym_path).card
    except BundleError:
        return Direction.maximize, f"no card for task {task} here: higher ranked better"
    name = subtask or card.primary
    found = [s for s in card.subtasks if s.name == name]
    if not found:
        return Direction.maximize, f"task {task} has no subtask {name}: higher ranked better"
    return Direction(found[0].direction), None


def ledger(
    by: RollUpBy = typer.Option(RollUpBy.run, "--by", help="Roll up per run, lab or campaign."),
    campaign: str | None = typer.Option(None, help="Only calls of this campaign (an id prefix)."),
    as_json: AsJson = False,
) -> None:
    """Calls, compute seconds, tokens and dollars per run, lab (within its campaign) or
    campaign."""
    runner = read_runner()
    with runner.store.engine.connect() as conn:
        campaign = resolve_campaign(runner.store, conn, campaign)
        if by == RollUpBy.lab:
            # Labs are named lab-0, lab-1… in every campaign: one lab is a campaign's lab.
            labs = ledger_by_lab(conn, campaign)
            totals, campaigns = [t for _, t in labs], [c for c, _ in labs]
        else:
            rolled: RollUp = "campaign" if by == RollUpBy.campaign else "run"
            totals = ledger_totals(conn, by=rolled, campaign=campaign)
            campaigns = None
    if as_json:
        rows = [asdict(t) for t in totals]
        if campaigns is not None:
            rows = [r | {"campaign": c} for r, c in zip(rows, campaigns, strict=True)]
        emit_json(rows)
        return
    if not totals:
        what = f"campaign {campaign}" if campaign else "the log"
        console.print(f"no tool or model call in {what} yet")
        return
    console.print(ledger_table(totals, by.value, campaigns))


def curves(
    out: Path | None = typer.Option(None, "--out", help="Folder to write the PNG files to."),
    campaign: str | None = typer.Option(None, help=CAMPAIGN_HELP),
    by: LinesBy = typer.Option(LinesBy.lab, "--by", help="One line per lab (run) or campaign."),
    as_json: bool = typer.Option(False, "--json", help="Print the curves' points as JSON."),
) -> None:
    """Best score vs time, attempts, tokens and cost, and per paper (AgentRxiv), as PNGs
    (`--out`) or as the points they are drawn from (`--json`)."""
    if out is None and not as_json:
        err.print("[red]give --out DIR for the PNG files, or --json for the points[/]")
        raise typer.Exit(2)
    runner = read_runner()
    with runner.store.engine.connect() as conn:
        campaign = resolve_campaign(runner.store, conn, campaign)
        points = curve_points(conn, campaign=campaign)
        papers = paper_points(conn, campaign=campaign)
        modes = campaign_modes(conn)
        ways = best_directions(conn, [campaign])
    written = []
    if out is not None:
        from labrxiv import plots  # matplotlib is slow to import: only when asked

        # A line is named by its campaign's mode and id: two hex ids alone do not tell
        # the isolated campaign from the archive one.
        names = {c: f"{m} {c}" if m else c for c, m in modes.items()}
        drawn = plots.write_curves(
            renamed(points, names),
            renamed(papers, names),
            out,
            by=by.value,
            directions=ways,
            every=True,
        )
        written = [out / plot.file for plot in drawn]
    if as_json:
        emit_json(curves_json(points, papers, modes) | {"written": [str(p) for p in written]})
        return
    console.print(f"{len(points)} scored attempts, {len(papers)} papers")
    for path in written:
        console.print(f"wrote {escape(str(path))}")
