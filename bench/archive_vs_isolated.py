"""Do labs that read a shared archive do better than isolated labs on the same budget?

Runs, for each seed, an isolated campaign and an archive campaign of `search` labs on
a built-in task (embedded system, real experiments graded by the task's grader) and
prints the best normalized score after each paper index, as mean ± standard deviation
over the seeds, and the mean per-seed difference (archive − isolated) with its spread.

    python bench/archive_vs_isolated.py --task ts-saliency --seeds 10 --papers 3 --attempts 6

It ends with two paired comparisons over the seeds, each with on how many seeds the
archive campaign was ahead, one-sided sign and Wilcoxon signed-rank tests and the mean
difference with its standard error: the campaign's best (the best of any lab) and the
mean over the labs of each lab's own best (what a lab reaches on its budget).
"""

import argparse
import logging
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from scipy.stats import wilcoxon

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from labrxiv.campaigns import run_campaign  # noqa: E402
from labrxiv.report import summarize  # noqa: E402
from labrxiv.settings import load_settings  # noqa: E402
from labrxiv.wiring import open_embedded  # noqa: E402
from workers.lab.campaign import CampaignPlan  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="continual-digits")
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--labs", type=int, default=3)
    parser.add_argument("--papers", type=int, default=3)
    parser.add_argument("--attempts", type=int, default=6)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    quiet = Console(file=open("/dev/null", "w"))  # noqa: SIM115 - the live tables go nowhere
    curves: dict[str, list[list[float]]] = {"isolated": [], "archive": []}
    labs: dict[str, list[float]] = {"isolated": [], "archive": []}
    """Per seed: the mean over the campaign's labs of each lab's best."""
    started = time.perf_counter()
    for seed in range(args.seeds):
        with tempfile.TemporaryDirectory() as folder:
            system = open_embedded(load_settings(data_dir=Path(folder)), threads=args.labs)
            try:
                bundle = system.ctx.labs.bundle(args.task)
                for mode in ("isolated", "archive"):
                    plan = CampaignPlan(
                        task=args.task,
                        labs=args.labs,
                        papers=args.papers,
                        mode=mode,
                        seed=seed,
                        attempts=args.attempts,
                    )
                    outcome = run_campaign(system.bus, system.store, plan, quiet)
                    system.settle()
                    summary = summarize(system.store, outcome.campaign, mode, bundle)
                    curves[mode].append(summary.best_per_paper)
                    labs[mode].append(statistics.mean(summary.best_per_lab))
            finally:
                system.close()
        print(
            f"seed {seed}: campaign best: isolated {curves['isolated'][-1][-1]:.3f}  "
            f"archive {curves['archive'][-1][-1]:.3f}; mean lab best: isolated "
            f"{labs['isolated'][-1]:.3f}  archive {labs['archive'][-1]:.3f}",
            flush=True,
        )
    elapsed = time.perf_counter() - started
    papers = min(len(c) for mode in curves.values() for c in mode)
    print(
        f"\n{args.task}: {args.seeds} seeds, {args.labs} labs × {args.papers} papers × "
        f"{args.attempts} attempts per campaign ({elapsed:.0f} s)"
    )
    print("paper  isolated (mean ± sd)  archive (mean ± sd)  archive − isolated (mean ± sd)")
    for index in range(papers):
        iso = [c[index] for c in curves["isolated"]]
        arc = [c[index] for c in curves["archive"]]
        diff = [a - i for a, i in zip(arc, iso, strict=True)]
        print(f"{index + 1:>5}  {_fmt(iso):>20}  {_fmt(arc):>19}  {_fmt(diff):>30}")
    print()
    _paired(
        "campaign best (any lab's) after the last paper",
        [c[-1] for c in curves["archive"]],
        [c[-1] for c in curves["isolated"]],
    )
    _paired("mean over the labs of each lab's best", labs["archive"], labs["isolated"])


def _paired(what: str, archive: list[float], isolated: list[float]) -> None:
    """The per-seed comparison of one figure: sign and signed-rank tests, mean difference."""
    diff = [a - i for a, i in zip(archive, isolated, strict=True)]
    ahead, behind = sum(d > 0 for d in diff), sum(d < 0 for d in diff)
    print(
        f"{what}: isolated {_fmt(isolated)}, archive {_fmt(archive)}; archive ahead in "
        f"{ahead} of {len(diff)} seeds, behind in {behind}, tied in "
        f"{len(diff) - ahead - behind}; one-sided sign test p = {_sign_test(ahead, behind):.3f},"
        f" Wilcoxon signed-rank p = {_wilcoxon(diff):.3f}; mean difference {_fmt(diff)}"
        f" (standard error {_stderr(diff):.3f})"
    )


def _sign_test(ahead: int, behind: int) -> float:
    """P(at least `ahead` of the untied seeds favour the archive) if neither mode is better."""
    untied = ahead + behind
    return sum(math.comb(untied, k) for k in range(ahead, untied + 1)) / 2**untied


def _wilcoxon(diff: list[float]) -> float:
    """One-sided Wilcoxon signed-rank test of archive > isolated (tied seeds dropped):
    unlike the sign test it weighs how far apart the modes are on each seed."""
    if not any(diff):
        return 1.0
    return float(wilcoxon(diff, zero_method="wilcox", alternative="greater").pvalue)


def _stderr(values: list[float]) -> float:
    return statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else 0.0


def _fmt(values: list[float]) -> str:
    spread = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{statistics.mean(values):.3f} ± {spread:.3f}"


if __name__ == "__main__":
    main()
