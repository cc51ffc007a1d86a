"""`labrxiv demo`: isolated labs against labs sharing an archive, on a built-in task.

Runs an isolated campaign and an archive campaign of parallel `search` labs (the
offline baseline agent) on embedded defaults, shows their progress live, prints the
comparison and writes `report/` (plots and a markdown summary). Every number comes
from experiments that ran and were graded by the task's grader.
"""

import shutil
from dataclasses import dataclass, replace
from pathlib import Path

from rich.console import Console
from rich.table import Table

from labrxiv.campaigns import run_campaign
from labrxiv.plots import Plot, report_curves
from labrxiv.report import CampaignSummary, summarize
from labrxiv.settings import Settings
from labrxiv.wiring import open_embedded
from projections.curves import curve_points, paper_points
from workers.lab.campaign import CampaignPlan


@dataclass(frozen=True)
class DemoResult:
    """What the demo measured, for the CLI to print and tests to check."""

    isolated: CampaignSummary
    archive: CampaignSummary
    report: Path


def run_demo(
    settings: Settings,
    console: Console,
    task: str = "continual-digits",
    labs: int = 3,
    papers: int = 3,
    attempts: int = 9,
    seed: int = 0,
    report: Path = Path("report"),
) -> DemoResult:
    """Run both campaigns in a fresh `<data_dir>/demo` and write the report."""
    demo_dir = settings.data_dir / "demo"
    shutil.rmtree(demo_dir, ignore_errors=True)
    demo_settings = settings.model_copy(update={"data_dir": demo_dir, "database_url": None})
    system = open_embedded(demo_settings, threads=max(2, labs))
    try:
        bundle = system.ctx.labs.bundle(task)
        campaigns = {}
        for mode in ("isolated", "archive"):
            plan = CampaignPlan(
                task=task, labs=labs, papers=papers, mode=mode, seed=seed, attempts=attempts
            )
            title = f"{mode} campaign: {labs} search labs on {task} (offline baseline agent)"
            outcome = run_campaign(
                system.bus,
                system.store,
                plan,
                console,
                title=title,
                stall_seconds=demo_settings.stall_seconds,
                reactor=system.ctx.reactor,
                leases=system.ctx.leases,
            )
            system.bus.join()
            campaigns[mode] = outcome.campaign
        system.settle()
        summaries = {m: summarize(system.store, c, m, bundle) for m, c in campaigns.items()}
        result = DemoResult(summaries["isolated"], summaries["archive"], report)
        with system.store.engine.connect() as conn:
            points = [p for c in campaigns.values() for p in curve_points(conn, c)]
            paper_rows = [p for c in campaigns.values() for p in paper_points(conn, c)]
        labels = {c: m for m, c in campaigns.items()}
        points = [replace(p, campaign=labels[p.campaign]) for p in points]  # type: ignore[index]
        paper_rows = [replace(p, campaign=labels[p.campaign]) for p in paper_rows]  # type: ignore[index]
        plots = report_curves(points, paper_rows, report, by="campaign")
    finally:
        system.close()
    console.print(comparison_table(result))
    write_report(result, task, labs, papers, attempts, seed, plots)
    drawn = ", ".join(p.file for p in plots if p.drawn)
    console.print(f"report written to {report}/ (summary.md, {drawn})")
    for plot in plots:
        if plot.note:  # why a plot was left out, or what a drawn one leaves out
            console.print(plot.note, markup=False)
    return result


def comparison_table(result: DemoResult) -> Table:
    """Isolated against archive, paper by paper."""
    table = Table(title="best normalized score after each paper (higher is better)")
    table.add_column("paper")
    table.add_column("isolated")
    table.add_column("archive")
    rows = max(len(result.isolated.best_per_paper), len(result.archive.best_per_paper))
    for index in range(rows):
        cells = [
            f"{s.best_per_paper[index]:.3f}" if index < len(s.best_per_paper) else "-"
            for s in (result.isolated, result.archive)
        ]
        table.add_row(str(index + 1), *cells)
    for label, key in (
        ("mean of labs' best", "mean_lab_best"),
        ("over baseline", "over_baseline"),
        ("seconds / paper", "seconds_per_paper"),
        ("compute s / paper", "compute_per_paper"),
    ):
        values = [getattr(s, key) for s in (result.isolated, result.archive)]
        table.add_row(label, *("-" if v is None else f"{v:.3f}" for v in values))
    return table


def write_report(
    result: DemoResult,
    task: str,
    labs: int,
    papers: int,
    attempts: int,
    seed: int,
    plots: list[Plot],
) -> None:
    """`report/summary.md`, beside the plots; a plot left out leaves its reason in its place."""
    result.report.mkdir(parents=True, exist_ok=True)
    lines = [
        "# labrxiv demo report",
        "",
        f"Task `{task}`; {labs} labs per campaign, {papers} papers and {attempts} graded "
        f"attempts per lab, seed {seed}. Labs use the offline `search` policy (a baseline "
        "agent, not an LLM). Scores come from the task's grader.",
        "",
        "| | isolated | archive |",
        "|---|---|---|",
    ]
    iso, arc = result.isolated, result.archive
    for index in range(max(len(iso.best_per_paper), len(arc.best_per_paper))):
        cells = [
            f"{s.best_per_paper[index]:.3f}" if index < len(s.best_per_paper) else "-"
            for s in (iso, arc)
        ]
        lines.append(f"| best normalized after paper {index + 1} | {cells[0]} | {cells[1]} |")
    for label, key in (
        ("mean over the labs of each lab's best normalized score", "mean_lab_best"),
        ("improvement over baseline (fraction of gap to reference)", "over_baseline"),
        ("wall seconds per paper", "seconds_per_paper"),
        ("compute seconds per paper", "compute_per_paper"),
    ):
        a, b = getattr(iso, key), getattr(arc, key)
        lines.append(
            f"| {label} | {'-' if a is None else f'{a:.3f}'} | {'-' if b is None else f'{b:.3f}'} |"
        )
    lines.append("")
    for plot in plots:
        lines += [plot.markdown(), ""]
    lines.append(
        "One seed is an anecdote: `python bench/archive_vs_isolated.py` measures the "
        "difference over several seeds with its spread."
    )
    (result.report / "summary.md").write_text("\n".join(lines) + "\n")
