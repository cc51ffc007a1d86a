"""`labrxiv demo`: isolated labs against labs sharing an archive, on a built-in task.

Runs an isolated campaign and an archive campaign of parallel `search` labs (the
offline baseline agent) on embedded defaults, shows their progress live, prints the
comparison and writes `report/` (plots and a markdown summary). Every number comes
from experiments that ran and were graded by the task's grader. How each run ended is
printed after each campaign; when every run of both ended in error, nothing was
measured: no report is written, and the result says so (`DemoResult.failed`).

One seed's pair of campaigns is an anecdote: where the task bundle records the
archive's effect measured over many seeds (`analysis.archive_effect`, written by
`bench/archive_vs_isolated.py --record`), the demo runs that budget, states the
measured effect with its spread and draws this run over the bench's curves.
"""

from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.table import Table

from analysis.archive_effect import RECORD, ArchiveEffect, BadRecord, read_effect
from analysis.campaign_summary import CampaignSummary
from labrxiv.campaigns import run_campaign
from labrxiv.demo_defaults import DEMO_TASK, LABS, PAPERS
from labrxiv.demo_folder import make_room, mark_finished
from labrxiv.effect_plot import effect_plot
from labrxiv.interrupt import Stopped, ctrl_c_between_ticks, stop_embedded
from labrxiv.plots import Plot, write_curves
from labrxiv.report import (
    RunEnding,
    count_endings,
    every_run_errored,
    print_endings,
    summarize,
)
from labrxiv.settings import Settings
from labrxiv.wiring import Embedded, open_embedded
from projections.curves import curve_points, paper_points, renamed
from projections.runs import best_directions
from runstate.words import counted
from workers.gym.registry import find_bundle
from workers.lab.campaign import CampaignPlan, deterministic_id

DETERMINISTIC = (
    "The labs took turns, one step at a time in a fixed order (`--deterministic`): the same "
    "seed gives the same numbers."
)
TIMINGS = ("seconds_per_paper", "compute_per_paper")
"""The summary's rows that vary from run to run with the same seed."""
NOT_DETERMINISTIC = (
    "The labs' steps ran in parallel: in the archive campaign, which lab read which paper "
    "first depended on timing, so the same seed can give other numbers. "
    "`labrxiv demo --deterministic` makes the labs take turns."
)


@dataclass(frozen=True)
class DemoResult:
    """What the demo measured, for the CLI to print and tests to check."""

    isolated: CampaignSummary
    archive: CampaignSummary
    report: Path
    endings: tuple[RunEnding, ...] = ()
    """How each run of both campaigns ended."""
    effect: ArchiveEffect | None = None
    """The archive's effect recorded for the task over many seeds; None if none is."""

    @property
    def failed(self) -> bool:
        """Every run of both campaigns ended in error: the demo measured nothing."""
        return every_run_errored(self.endings)


def run_demo(
    settings: Settings,
    console: Console,
    task: str = DEMO_TASK,
    labs: int | None = None,
    papers: int | None = None,
    attempts: int | None = None,
    seed: int = 0,
    report: Path = Path("report"),
    deterministic: bool = False,
    sandbox: str | None = None,
) -> DemoResult:
    """Run both campaigns in a fresh `<data_dir>/demo` and write the report (a folder
    there with more than a finished demo's log is moved aside: `labrxiv.demo_folder`).
    `labs`, `papers`, `attempts` (each lab's): None, the budget the task's recorded
    effect was measured on; with no record, 3 labs, 3 papers and the card's attempts.

    `deterministic`: the labs take turns, one step at a time in the order their steps
    were triggered (one bus thread, first in first out), and the campaigns' ids derive
    from the plan, so the same seed gives the same numbers; otherwise their steps run
    in parallel and, in archive mode, which lab reads which paper first depends on
    timing, so two demos may give different numbers. `sandbox`: the
    backend chosen for the labs' tools, recorded in each `run.started`."""
    effect = _recorded_effect(task, settings, console)
    if effect is not None:
        labs = labs or effect.labs
        papers = papers or effect.papers
        attempts = attempts or effect.attempts
    labs, papers = labs or LABS, papers or PAPERS
    demo_dir = settings.data_dir / "demo"
    kept = make_room(demo_dir)
    if kept is not None:
        console.print(
            f"{demo_dir} held more than a finished demo's log (runs recorded since, or a "
            f"demo stopped before its end): moved to {kept}, not deleted",
            markup=False,
            soft_wrap=True,
        )
    demo_settings = settings.model_copy(update={"data_dir": demo_dir, "database_url": None})
    system = open_embedded(demo_settings, threads=1 if deterministic else max(2, labs))
    try:
        bundle = system.ctx.labs.bundle(task)
        plans = [
            CampaignPlan(
                task=task,
                labs=labs,
                papers=papers,
                mode=mode,
                seed=seed,
                attempts=attempts,
                deterministic=deterministic,
                card=bundle.card.budgets,
                sandbox=sandbox,
            )
            for mode in ("isolated", "archive")
        ]
        attempts = plans[0].budget()[0].attempts  # given, else the card's: for the report
        try:
            with ctrl_c_between_ticks():
                campaigns, endings = run_campaigns(
                    system, plans, console, demo_settings.stall_seconds
                )
        except KeyboardInterrupt:
            console.print("stopping: the steps being taken end first (Ctrl-C again to quit now)")
            raise Stopped(stop_embedded(system, "Ctrl-C in labrxiv demo")) from None
        system.settle()
        mark_finished(demo_dir, system.store.max_position())  # the next demo may delete it
        summaries = {m: summarize(system.store, c, m, bundle) for m, c in campaigns.items()}
        result = DemoResult(
            summaries["isolated"], summaries["archive"], report, tuple(endings), effect
        )
        if result.failed:
            console.print(
                "[red]every run ended in error: nothing was measured and no report was "
                "written (each run's reason is above)[/]"
            )
            return result
        with system.store.engine.connect() as conn:
            points = [p for c in campaigns.values() for p in curve_points(conn, c)]
            paper_rows = [p for c in campaigns.values() for p in paper_points(conn, c)]
            ways = best_directions(conn, campaigns.values())
        labels = {c: m for m, c in campaigns.items()}
        plots = write_curves(
            renamed(points, labels),
            renamed(paper_rows, labels),
            report,
            by="campaign",
            directions=ways,
        )
        if effect is not None:
            this_run = (
                {m: summaries[m].best_per_paper for m in ("isolated", "archive")}
                if measured_budget(effect, labs, papers, attempts)
                else None
            )
            plots.insert(0, effect_plot(effect, this_run, report))
    finally:
        system.close()
    console.print(comparison_table(result))
    console.print(effect_said(result, task, labs, papers, attempts), markup=False, soft_wrap=True)
    write_report(result, task, labs, papers, attempts, seed, plots, deterministic)
    drawn = ", ".join(p.file for p in plots if p.drawn)
    timings = ", timings.md" if deterministic else ""
    console.print(f"report written to {report}/ (summary.md{timings}, {drawn})")
    for plot in plots:
        if plot.note:  # why a plot was left out, or what a drawn one leaves out
            console.print(plot.note, markup=False)
    return result


def _recorded_effect(task: str, settings: Settings, console: Console) -> ArchiveEffect | None:
    """The archive effect the task's bundle records, if it is this task's: a record that
    cannot be read, or one of another task or primary subtask (copied with a bundle, or
    left from before the card changed), is said in one line and not used."""
    bundle = find_bundle(task, settings.gym_path)
    try:
        effect = read_effect(bundle.path)
    except BadRecord as exc:
        console.print(str(exc), markup=False, soft_wrap=True)
        return None
    if effect is not None and (effect.task, effect.primary) != (task, bundle.card.primary):
        console.print(
            f"{bundle.path / RECORD}: records {effect.task}'s {effect.primary}, not "
            f"{task}'s {bundle.card.primary}: not used (`bench/archive_vs_isolated.py "
            f"--task {task} --record` measures it)",
            markup=False,
            soft_wrap=True,
        )
        return None
    return effect


def run_campaigns(
    system: Embedded, plans: list[CampaignPlan], console: Console, stall_seconds: float
) -> tuple[dict[str, str], list[RunEnding]]:
    """Each plan's campaign, one after the other, watched live (its labs taking turns where
    the plan is deterministic, `bench/archive_vs_isolated.py` too); (campaign ids by mode,
    how each run ended)."""
    campaigns: dict[str, str] = {}
    endings: list[RunEnding] = []
    for plan in plans:
        title = (
            f"{plan.mode} campaign: {counted(plan.labs, 'search lab')} on {plan.task} (offline "
            "baseline agent)"
        )
        outcome = run_campaign(
            system.bus,
            system.store,
            plan,
            console,
            title=title,
            stall_seconds=stall_seconds,
            reactor=system.ctx.reactor,
            leases=system.ctx.leases,
            campaign_id=deterministic_id(plan, 0) if plan.deterministic else None,
        )
        system.bus.join()
        campaigns[plan.mode] = outcome.campaign
        print_endings(console, outcome.endings)
        console.print(f"{plan.mode} campaign: {count_endings(outcome.endings)}")
        endings += outcome.endings
    return campaigns, endings


def effect_said(result: DemoResult, task: str, labs: int, papers: int, attempts: int | None) -> str:
    """What holds beyond this run: the effect measured over many seeds, or how to measure
    it; said whether this run's budget is the one measured."""
    effect = result.effect
    if effect is None:
        return (
            f"No archive effect over many seeds is recorded for {task}: this run is one "
            f"seed. `python bench/archive_vs_isolated.py --task {task} --seeds 20 --record` "
            "measures it."
        )
    said = "The archive's effect at the frontier. " + effect.said()
    if not measured_budget(effect, labs, papers, attempts):
        return said + (
            f" This run's budget ({counted(labs, 'lab')}, {counted(papers, 'paper')}, "
            f"{counted(attempts or 0, 'attempt')} a lab) is not the one measured: it is no "
            "seed of that measurement, and the plot does not draw it."
        )
    return said + " This run is one seed of it."


def _shown(value: float | None) -> str:
    """A figure of the comparison to three places; `-` for none, and never `-0.000` (a
    best at the baseline, less a rounding error)."""
    return "-" if value is None else f"{value + 0.0:.3f}".replace("-0.000", "0.000")


def measured_budget(effect: ArchiveEffect, labs: int, papers: int, attempts: int | None) -> bool:
    """Whether a run of `labs`, `papers` and `attempts` a lab is on the budget `effect`
    was measured on (then it is one seed of that measurement)."""
    return (labs, papers, attempts) == (effect.labs, effect.papers, effect.attempts)


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
        table.add_row(label, *(_shown(v) for v in values))
    return table


def write_report(
    result: DemoResult,
    task: str,
    labs: int,
    papers: int,
    attempts: int | None,
    seed: int,
    plots: list[Plot],
    deterministic: bool = False,
) -> None:
    """`report/summary.md`, beside the plots; a plot left out leaves its reason in its place.

    Deterministic, the timings go to `timings.md` instead: they vary from run to run,
    and the summary of two runs with the same seed is then the same, byte for byte."""
    result.report.mkdir(parents=True, exist_ok=True)
    lines = [
        "# labrxiv demo report",
        "",
        f"Task `{task}`; {counted(labs, 'lab')} per campaign, {counted(papers, 'paper')} and "
        f"{counted(attempts or 0, 'graded attempt')} per lab, seed {seed}. Labs use the "
        "offline `search` policy (a baseline agent, not an LLM). Scores come from the task's "
        "grader.",
        "",
        DETERMINISTIC if deterministic else NOT_DETERMINISTIC,
        "",
        "| | isolated | archive |",
        "|---|---|---|",
    ]
    timings = ["| | isolated | archive |", "|---|---|---|"]
    iso, arc = result.isolated, result.archive
    for index in range(max(len(iso.best_per_paper), len(arc.best_per_paper))):
        cells = [
            f"{s.best_per_paper[index]:.3f}" if index < len(s.best_per_paper) else "-"
            for s in (iso, arc)
        ]
        lines.append(f"| best normalized after paper {index + 1} | {cells[0]} | {cells[1]} |")
    for label, key in (
        ("mean over the labs of each lab's best normalized score", "mean_lab_best"),
        ("improvement over baseline (fraction of the gap to the SOTA)", "over_baseline"),
        ("wall seconds per paper", "seconds_per_paper"),
        ("compute seconds per paper", "compute_per_paper"),
    ):
        a, b = getattr(iso, key), getattr(arc, key)
        row = f"| {label} | {_shown(a)} | {_shown(b)} |"
        (timings if deterministic and key in TIMINGS else lines).append(row)
    lines.append("")
    if deterministic:
        lines += ["Timings vary from run to run: they are in [timings.md](timings.md).", ""]
        (result.report / "timings.md").write_text("\n".join(["# timings", "", *timings]) + "\n")
    lines += [
        "## What holds over many seeds",
        "",
        effect_said(result, task, labs, papers, attempts),
        "",
    ]
    for plot in plots:
        lines += [plot.markdown(), ""]
    (result.report / "summary.md").write_text("\n".join(lines) + "\n")
