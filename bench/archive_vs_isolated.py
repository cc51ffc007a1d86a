"""Do labs that read a shared archive do better than isolated labs on the same budget?

Runs, for each seed, an isolated campaign and an archive campaign of `search` labs on
a built-in task (embedded system, real experiments graded by the task's grader) and
prints the best normalized score after each paper index, as mean ± standard deviation
over the seeds, and the mean per-seed difference (archive − isolated) with its spread.

    python bench/archive_vs_isolated.py --task ts-saliency --seeds 10 --papers 4 --attempts 8

It ends with two paired comparisons over the seeds, each with on how many seeds the
archive campaign was ahead, one-sided sign and Wilcoxon signed-rank tests and the mean
difference with its standard error: the campaign's best (the best of any lab) and the
mean over the labs of each lab's own best (what a lab reaches on its budget).
"""

import argparse
import logging
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from rich.console import Console

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from analysis.archive_effect import (  # noqa: E402
    RECORD,
    ArchiveEffect,
    Paired,
    paired,
    spread,
    stderr,
)
from labrxiv.demo import run_campaigns  # noqa: E402
from labrxiv.report import summarize  # noqa: E402
from labrxiv.settings import load_settings  # noqa: E402
from labrxiv.wiring import open_embedded  # noqa: E402
from workers.errors import BundleError  # noqa: E402
from workers.lab.campaign import CampaignPlan  # noqa: E402


def _at_least_one(text: str) -> int:
    """A count given on the command line: a whole number of 1 or more."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of 1 or more")
    return value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="continual-digits")
    parser.add_argument("--seeds", type=_at_least_one, default=10)
    parser.add_argument("--labs", type=_at_least_one, default=3)
    parser.add_argument("--papers", type=_at_least_one, default=4)
    parser.add_argument("--attempts", type=_at_least_one, default=8)
    parser.add_argument(
        "--record",
        action="store_true",
        help="write the figures into the task bundle (baselines/archive_effect.json)",
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    quiet = Console(file=open("/dev/null", "w"))  # noqa: SIM115 - the live tables go nowhere
    curves: dict[str, list[list[float]]] = {"isolated": [], "archive": []}
    raw: dict[str, list[float]] = {"isolated": [], "archive": []}
    """Per seed: the campaign's best raw primary score."""
    labs: dict[str, list[float]] = {"isolated": [], "archive": []}
    """Per seed: the mean over the campaign's labs of each lab's best."""
    started, commit = time.perf_counter(), _commit()  # the code measured, not the code at the end
    for seed in range(args.seeds):
        with tempfile.TemporaryDirectory() as folder:
            settings = load_settings(data_dir=Path(folder))
            system = open_embedded(settings, threads=1)
            try:
                try:
                    bundle = system.ctx.labs.bundle(args.task)
                except BundleError as exc:
                    raise SystemExit(f"archive_vs_isolated: {exc}") from None
                primary = bundle.card.subtask(bundle.card.primary)
                plans = [
                    CampaignPlan(
                        task=args.task,
                        labs=args.labs,
                        papers=args.papers,
                        mode=mode,
                        seed=seed,
                        attempts=args.attempts,
                        deterministic=True,
                    )
                    for mode in ("isolated", "archive")
                ]
                campaigns, _ = run_campaigns(system, plans, quiet, settings.stall_seconds)
                system.settle()
                summaries = {
                    mode: summarize(system.store, campaign, mode, bundle)
                    for mode, campaign in campaigns.items()
                }
                if all(s.best_score is None for s in summaries.values()):
                    raise SystemExit(
                        f"archive_vs_isolated: seed {seed}: no attempt of either campaign was "
                        f"graded (every evaluate failed); `labrxiv demo --task {args.task}` "
                        "shows the tools' errors; nothing recorded"
                    )
                for mode, summary in summaries.items():
                    curves[mode].append(summary.best_per_paper)
                    # A campaign that graded nothing is at the baseline, not at 0.0
                    # (the best value of a minimized metric).
                    raw[mode].append(
                        primary.baseline if summary.best_score is None else summary.best_score
                    )
                    labs[mode].append(statistics.mean(summary.best_per_lab or [0.0]))
            finally:
                system.close()
        print(
            f"seed {seed}: campaign best: isolated {curves['isolated'][-1][-1]:.3f}  "
            f"archive {curves['archive'][-1][-1]:.3f}; mean lab best: isolated "
            f"{labs['isolated'][-1]:.3f}  archive {labs['archive'][-1]:.3f}",
            flush=True,
        )
    elapsed = time.perf_counter() - started
    effect = ArchiveEffect(
        task=args.task,
        seeds=args.seeds,
        labs=args.labs,
        papers=args.papers,
        attempts=args.attempts,
        primary=primary.name,
        metric=primary.metric,
        direction=primary.direction,
        measured_at=datetime.now(UTC).isoformat(timespec="seconds"),
        commit=commit,
        frontier=paired([c[-1] for c in curves["archive"]], [c[-1] for c in curves["isolated"]]),
        frontier_raw=_raw(raw, primary.direction),
        labs_best=paired(labs["archive"], labs["isolated"]),
        per_paper=curves,
    )
    print(
        f"\n{args.task}: {args.seeds} seeds, {args.labs} labs × {args.papers} papers × "
        f"{args.attempts} attempts per lab ({elapsed:.0f} s)"
    )
    print("paper  isolated (mean ± sd)  archive (mean ± sd)  archive − isolated (mean ± sd)")
    papers = min(len(c) for mode in curves.values() for c in mode)
    for index in range(papers):
        iso = [c[index] for c in curves["isolated"]]
        arc = [c[index] for c in curves["archive"]]
        diff = [a - i for a, i in zip(arc, iso, strict=True)]
        print(f"{index + 1:>5}  {_fmt(iso):>20}  {_fmt(arc):>19}  {_fmt(diff):>30}")
    print()
    _show("campaign best (any lab's), normalized", effect.frontier)
    _show(f"campaign best (any lab's), raw {primary.name}", effect.frontier_raw)
    print(f"relative gain of the archive at the frontier: {effect.gain:+.1%}")
    _show("mean over the labs of each lab's best", effect.labs_best)
    if args.record:
        path = bundle.path / RECORD
        path.write_text(effect.model_dump_json(indent=1) + "\n")
        print(f"recorded in {path}")


def _raw(raw: dict[str, list[float]], direction: str) -> Paired:
    """The raw best, compared with higher as better (a minimized metric negated back)."""
    sign = 1.0 if direction == "maximize" else -1.0
    compared = paired([sign * v for v in raw["archive"]], [sign * v for v in raw["isolated"]])
    return compared.model_copy(update={"archive": raw["archive"], "isolated": raw["isolated"]})


def _show(what: str, figure: Paired) -> None:
    """One paired figure: the modes, how many seeds each way, the tests, the difference."""
    diff = figure.differences
    print(
        f"{what}: isolated {_fmt(figure.isolated)}, archive {_fmt(figure.archive)}; archive "
        f"ahead in {figure.ahead} of {len(diff)} seeds, behind in {figure.behind}, tied in "
        f"{figure.tied}; one-sided sign test p = {figure.sign_p:.3f}, Wilcoxon signed-rank "
        f"p = {figure.wilcoxon_p:.3f}; mean difference {_fmt(diff)} (standard error "
        f"{stderr(diff):.3f})"
    )


def _commit() -> str:
    done = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parent,
        check=False,
    )
    return done.stdout.strip() or "unknown"


def _fmt(values: list[float]) -> str:
    mean, sd = spread(values)
    return f"{mean:.3f} ± {sd:.3f}"


if __name__ == "__main__":
    main()
