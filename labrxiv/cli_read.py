"""`labrxiv papers`, `labrxiv ledger`, `labrxiv curves`: the archive, ledger and curve read models.

They read the read models as the projector left them (`labrxiv projector` keeps them
current; `labrxiv projector --once` catches up once) and never write the log.
"""

import enum
import logging
from dataclasses import replace
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape

from labrxiv.settings import SettingsError, load_settings
from labrxiv.views_read import ledger_table, paper_view, papers_table, search_table, top_table
from projections.archive import get_paper, list_papers
from projections.archive_search import ClaimedPaper, search_papers, top_papers
from projections.curves import curve_points, paper_points
from projections.ledger import ledger_totals
from projections.runner import ProjectionRunner
from workers.lab.archive_log import LogArchive

papers_app = typer.Typer(
    help="The paper archive (AgentRxiv): list, show, search, top.", no_args_is_help=True
)
console = Console()


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


def _runner() -> ProjectionRunner:
    """The projection runner on the configured store, with every read model's table created."""
    from labrxiv.wiring import open_runner

    try:
        settings = load_settings()
    except SettingsError as exc:
        console.print(f"[red]{escape(str(exc))}[/]")
        raise typer.Exit(2) from None
    logging.basicConfig(
        level=settings.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    runner = open_runner(settings)
    runner.create_schema()  # before any projector ran there are no tables: show them empty
    return runner


@papers_app.command("list")
def papers_list(
    task: str | None = typer.Option(None, help="Only papers on this task."),
    campaign: str | None = typer.Option(None, help="Only papers of this campaign."),
    lab: str | None = typer.Option(None, help="Only papers of this lab."),
) -> None:
    """Every paper in the archive, in submission order."""
    runner = _runner()
    with runner.store.engine.connect() as conn:
        papers = list_papers(conn, task=task, campaign=campaign, lab=lab)
    console.print(papers_table(papers, f"papers ({len(papers)})"))


@papers_app.command("show")
def papers_show(paper_id: str = typer.Argument(..., help="The paper's archive id.")) -> None:
    """One paper in full: claims (verified against the grader's scores), method, citations,
    who cited and who retrieved it, body."""
    runner = _runner()
    with runner.store.engine.connect() as conn:
        detail = get_paper(conn, paper_id)
    if detail is None:
        console.print(f"[red]no paper {escape(paper_id)} in the archive[/]")
        raise typer.Exit(1)
    checked = LogArchive(runner.store).get(paper_id)  # claims checked against the log
    verified = [c["verified"] for c in checked["claims"]] if checked else None
    console.print(paper_view(detail, verified))


@papers_app.command("search")
def papers_search(
    query: str = typer.Argument(..., help="Words to look for."),
    task: str | None = typer.Option(None, help="Only papers on this task."),
    k: int = typer.Option(10, "-k", min=1, help="How many papers."),
) -> None:
    """Full-text search (BM25 over title, abstract and body), best match first."""
    runner = _runner()
    with runner.store.engine.connect() as conn:
        hits = search_papers(conn, query, task=task, k=k)
    if not hits:
        console.print(f"no paper matches {escape(query)!r}")
        return
    console.print(search_table(hits, query))


@papers_app.command("top")
def papers_top(
    task: str = typer.Argument(..., help="The task."),
    k: int = typer.Option(10, "-k", min=1, help="How many papers."),
    subtask: str | None = typer.Option(None, help="Rank by this subtask (default: headline)."),
    direction: Direction = typer.Option(Direction.maximize, help="Which way is better."),
    verified_only: bool = typer.Option(
        False, "--verified-only", help="Rank only claims the log verifies."
    ),
) -> None:
    """The task's papers with the best claimed value, each marked verified or not (the
    claim is the grader's score of the attempt it names, recorded before the paper)."""
    runner = _runner()
    with runner.store.engine.connect() as conn:
        ranked = top_papers(
            conn,
            task,
            k=None if verified_only else k,
            subtask=subtask,
            direction=direction.value,
        )
    archive = LogArchive(runner.store)
    if verified_only:
        ranked = _best_verified(archive, ranked, direction)[:k]
        console.print(top_table(ranked, task, [True] * len(ranked)))
        return
    console.print(top_table(ranked, task, [_claim_verified(archive, i) for i in ranked]))


def _verified_claims(archive: LogArchive, item: ClaimedPaper) -> list[float]:
    """The values of the paper's claims on the ranked subtask that the log verifies."""
    checked = archive.get(item.paper.paper_id)
    claims = checked["claims"] if checked else []
    return [c["value"] for c in claims if c["verified"] and c["subtask"] == item.subtask]


def _claim_verified(archive: LogArchive, item: ClaimedPaper) -> bool:
    """Whether the paper's ranked claim is one the log verifies."""
    return item.value in _verified_claims(archive, item)


def _best_verified(
    archive: LogArchive, ranked: list[ClaimedPaper], direction: Direction
) -> list[ClaimedPaper]:
    """The papers re-ranked by their best verified claim on the subtask (a paper whose
    best claim is inflated still ranks by a lower one it measured; the earlier paper
    first among equal values); a paper with none is left out."""
    pick = max if direction == Direction.maximize else min
    kept = []
    for item in ranked:
        values = _verified_claims(archive, item)
        if values:
            kept.append(replace(item, value=pick(values)))
    sign = -1 if direction == Direction.maximize else 1
    return sorted(kept, key=lambda item: (sign * item.value, item.paper.position))


def ledger(
    by: RollUpBy = typer.Option(RollUpBy.run, "--by", help="Roll up per run, lab or campaign."),
    campaign: str | None = typer.Option(None, help="Only calls of this campaign."),
) -> None:
    """Calls, compute seconds, tokens and dollars per run, lab or campaign."""
    runner = _runner()
    with runner.store.engine.connect() as conn:
        totals = ledger_totals(conn, by=by.value, campaign=campaign)
    console.print(ledger_table(totals, by.value))


def curves(
    out: Path = typer.Option(..., "--out", help="Folder to write the PNG files to."),
    campaign: str | None = typer.Option(None, help="Only this campaign."),
    by: LinesBy = typer.Option(LinesBy.lab, "--by", help="One line per lab (run) or campaign."),
) -> None:
    """Best score vs time, attempts, tokens and cost, and per paper (AgentRxiv), as PNGs."""
    from labrxiv.plots import write_curves  # matplotlib is slow to import: only when asked

    runner = _runner()
    with runner.store.engine.connect() as conn:
        points = curve_points(conn, campaign=campaign)
        papers = paper_points(conn, campaign=campaign)
    written = write_curves(points, papers, out, by=by.value)
    console.print(f"{len(points)} scored attempts, {len(papers)} papers")
    for path in written:
        console.print(f"wrote {escape(str(path))}")
