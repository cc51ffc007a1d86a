"""What review is worth, over several seeds, with spread:

(a) the review → revise cycle: the measured score and the rating of papers by revision
    round (round 1: first papers; round k + 1: revisions of round-k papers), from
    campaigns of `search` labs with `--review grounded --review-rounds R`;
(b) archive labs reading only accepted papers against reading all of them: the best
    normalized score each lab reaches on the same budget, per seed, paired.

Embedded system, real experiments graded by the task's grader, the `grounded` reviewer.

    .venv/bin/python bench/review_cycle.py --seeds 10
"""

import argparse
import logging
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from scipy.stats import wilcoxon

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from events import EventStore  # noqa: E402
from events.payloads import ReviewConfig  # noqa: E402
from labrxiv.settings import load_settings  # noqa: E402
from labrxiv.wiring import Embedded, open_embedded  # noqa: E402
from workers.lab.campaign import CampaignPlan, start_campaign  # noqa: E402
from workers.review.evidence import gather, measured_score  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="continual-digits")
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--labs", type=int, default=4)
    parser.add_argument("--attempts", type=int, default=12, help="per lab, both parts")
    parser.add_argument("--rounds", type=int, default=2, help="(a): revision rounds")
    parser.add_argument("--papers", type=int, default=3, help="(b): papers per lab")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    started = time.perf_counter()
    by_round: dict[int, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    changes: dict[str, list[float]] = defaultdict(list)
    """Each revision against the paper it revises: score and rating differences."""
    seed_round: dict[int, list[tuple[float, float]]] = defaultdict(list)
    reads: dict[str, list[float]] = {"all": [], "accepted": []}
    best: dict[str, list[float]] = {"all": [], "accepted": []}
    for seed in range(args.seeds):
        with tempfile.TemporaryDirectory() as folder:
            system = open_embedded(load_settings(data_dir=Path(folder)), threads=args.labs)
            try:
                cycle = _campaign(system, args, seed, ReviewConfig(rounds=args.rounds), "all", 1)
                per_round = _papers_by_round(system.store, cycle, changes)
                for round_, papers in per_round.items():
                    for score, rating in papers:
                        by_round[round_]["score"].append(score)
                        by_round[round_]["rating"].append(rating)
                    seed_round[round_].append(
                        (
                            statistics.fmean(s for s, _ in papers),
                            statistics.fmean(r for _, r in papers),
                        )
                    )
                for mode in ("all", "accepted"):
                    campaign = _campaign(
                        system,
                        args,
                        seed,
                        ReviewConfig(),
                        mode,
                        args.papers,
                    )
                    labs = _labs_best(system.store, campaign)
                    reads[mode].append(statistics.fmean(labs))
                    best[mode].append(max(labs))
            finally:
                system.close()
        print(f"seed {seed} done ({time.perf_counter() - started:.0f}s)", flush=True)
    _print_rounds(by_round, seed_round, args)
    _print_changes(changes)
    _print_reads(reads, best, args)


def _campaign(
    system: Embedded,
    args: argparse.Namespace,
    seed: int,
    review: ReviewConfig,
    reads: str,
    papers: int,
) -> str:
    plan = CampaignPlan(
        task=args.task,
        labs=args.labs,
        papers=papers,
        mode="archive",
        seed=seed,
        attempts=args.attempts,
        review=review,
        archive_reads=reads,  # type: ignore[arg-type]
    )
    campaign, _ = start_campaign(system.bus, plan)
    system.settle()
    return campaign


def _papers_by_round(
    store: EventStore, campaign: str, changes: dict[str, list[float]]
) -> dict[int, list[tuple[float, float]]]:
    """(measured score, mean rating) of each paper of the campaign, by revision round;
    each revision's change from the paper it revises is added to `changes`."""
    seen: dict[str, tuple[float, float]] = {}
    rounds: dict[str, int] = {}
    ratings: dict[str, list[int]] = defaultdict(list)
    for record in store.iter_records(types=["review.submitted"], correlation=campaign):
        ratings[record.payload["paper_id"]].append(record.payload["form"]["rating"])
    out: dict[int, list[tuple[float, float]]] = defaultdict(list)
    for record in store.iter_records(types=["paper.submitted"], correlation=campaign):
        payload = record.payload
        round_ = rounds[payload["revises"]] + 1 if payload.get("revises") else 1
        rounds[payload["paper_id"]] = round_
        evidence = gather(store, store.read_stream(record.stream), record.version)
        score = measured_score(evidence.paper, evidence.graded)
        if score is not None and ratings[payload["paper_id"]]:
            rating = statistics.fmean(ratings[payload["paper_id"]])
            out[round_].append((score, rating))
            seen[payload["paper_id"]] = (score, rating)
            revised = seen.get(payload.get("revises") or "")
            if revised is not None:
                changes["score"].append(score - revised[0])
                changes["rating"].append(rating - revised[1])
    return dict(out)


def _labs_best(store: EventStore, campaign: str) -> list[float]:
    """Each lab's best normalized score in the campaign."""
    best: dict[str, float] = {}
    for record in store.iter_records(types=["experiment.scored"], correlation=campaign):
        score = record.payload.get("normalized_score")
        if score is not None:
            best[record.stream] = max(score, best.get(record.stream, score))
    return list(best.values())


def _spread(values: list[float]) -> str:
    if not values:
        return "-"
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{statistics.fmean(values):.3f} ± {sd:.3f}"


def _print_rounds(
    by_round: dict[int, dict[str, list[float]]],
    seed_round: dict[int, list[tuple[float, float]]],
    args: argparse.Namespace,
) -> None:
    print(
        f"\n(a) papers by revision round: {args.task}, {args.labs} labs, {args.attempts} "
        f"attempts, --review-rounds {args.rounds}, {args.seeds} seeds"
    )
    print(f"{'round':>5} {'papers':>7} {'seeds':>6} {'measured score':>16} {'rating':>14}")
    for round_ in sorted(by_round):
        figures = by_round[round_]
        print(
            f"{round_:>5} {len(figures['score']):>7} {len(seed_round[round_]):>6} "
            f"{_spread(figures['score']):>16} {_spread(figures['rating']):>14}"
        )
    print("(mean ± standard deviation over papers; a round's papers are the revisions made)")


def _print_changes(changes: dict[str, list[float]]) -> None:
    """Paired: each revision against the paper it revises (the rounds above are not
    paired: only papers with something to answer are revised)."""
    score, rating = changes["score"], changes["rating"]
    if not score:
        print("no revision was made")
        return
    better = sum(d > 0 for d in score)
    p = wilcoxon([d for d in score if d != 0]).pvalue if sum(d != 0 for d in score) >= 2 else 1.0
    print(
        f"each revision against the paper it revises ({len(score)} revisions): measured score "
        f"{_spread(score)} (higher in {better}, Wilcoxon p = {p:.3g}), rating {_spread(rating)}"
    )


def _print_reads(
    reads: dict[str, list[float]], best: dict[str, list[float]], args: argparse.Namespace
) -> None:
    print(
        f"\n(b) archive labs reading accepted papers only against all: {args.task}, "
        f"{args.labs} labs, {args.papers} papers, {args.attempts} attempts, {args.seeds} seeds"
    )
    for name, values in (("mean of labs' best", reads), ("campaign best", best)):
        diffs = [a - b for a, b in zip(values["accepted"], values["all"], strict=True)]
        ahead = sum(d > 0 for d in diffs)
        behind = sum(d < 0 for d in diffs)
        nonzero = [d for d in diffs if d != 0]
        p = wilcoxon(nonzero).pvalue if len(nonzero) >= 2 else float("nan")
        print(
            f"{name:>20}: all {_spread(values['all'])}, accepted {_spread(values['accepted'])}; "
            f"accepted − all {_spread(diffs)}, ahead/behind/tied {ahead}/{behind}/"
            f"{len(diffs) - ahead - behind}, Wilcoxon p = {p:.3f}"
        )


if __name__ == "__main__":
    main()
