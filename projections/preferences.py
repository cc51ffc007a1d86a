"""Preference pairs from reviewed papers (CycleResearcher's construction): for the papers
written for the same task in the same cycle (a campaign's round of papers: first papers
are round 1, a revision of a round-k paper is round k + 1), the best-reviewed paper is
`chosen` and the worst-reviewed `rejected`. Papers are ordered by their reviews' mean
rating, then soundness, contribution and presentation, so two papers rated alike but
judged differently sound still make a pair; a task and cycle whose papers were all
reviewed alike makes none, and is said. One pair per task and cycle, from the archive and
reviews read models; the format is documented in docs/review.md ("Training data").
"""

from collections import defaultdict
from collections.abc import Callable, Sequence
from statistics import fmean
from typing import Any

from pydantic import BaseModel, ConfigDict
from sqlalchemy import Connection, select

from projections.archive import PAPERS
from projections.reviews import REVIEWS, SCORES


class PreferencePair(BaseModel):
    """One line of `labrxiv export preferences`: the keys TRL's DPO trainer and OpenRLHF
    read (`prompt`, `chosen`, `rejected`) and where each side came from."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    prompt: str
    """What the labs were asked: the task's goal."""
    chosen: str
    """The best-reviewed paper, as Markdown (title, abstract, body)."""
    rejected: str
    """The worst-reviewed paper, the same way."""
    task: str
    campaign: str | None
    round: int
    """The cycle: 1 for first papers, k + 1 for revisions of round-k papers."""
    chosen_paper: str
    rejected_paper: str
    chosen_scores: dict[str, float]
    """The mean of each review score of the chosen paper (rating, soundness…)."""
    rejected_scores: dict[str, float]
    chosen_events: list[str]
    """The ids of the chosen paper's `paper.submitted` and its `review.submitted` events."""
    rejected_events: list[str]
    papers: int
    """How many reviewed papers the task and cycle had."""


ORDER = ("rating", "soundness", "contribution", "presentation")
"""The review scores that order a cycle's papers, the first first."""


def preference_pairs(
    conn: Connection,
    prompt_of: Callable[[str], str],
    campaign: str | None = None,
    task: str | None = None,
) -> tuple[list[PreferencePair], str | None, list[str]]:
    """Every pair the read models hold (narrowed to a campaign or task); when there is
    none, why; and the tasks and cycles left out because their papers were reviewed
    alike."""
    query = select(PAPERS).order_by(PAPERS.c.position)
    if campaign is not None:
        query = query.where(PAPERS.c.campaign == campaign)
    if task is not None:
        query = query.where(PAPERS.c.task == task)
    papers = [dict(row) for row in conn.execute(query).mappings()]
    if not papers:
        return [], "no paper in the archive matches", []
    reviews = _reviews(conn, [p["paper_id"] for p in papers])
    reviewed = [p for p in papers if p["paper_id"] in reviews]
    if not reviewed:
        return [], "none of these papers has been reviewed (campaign --review)", []
    groups: dict[tuple[str | None, str, int], list[dict[str, Any]]] = defaultdict(list)
    for paper in reviewed:
        groups[(paper["campaign"], paper["task"], paper["version"])].append(paper)
    pairs, ties = [], []
    for (group_campaign, group_task, round_), members in groups.items():
        ranked = sorted(members, key=lambda p: _standing(reviews[p["paper_id"]]), reverse=True)
        best, worst = ranked[0], ranked[-1]
        best_reviews, worst_reviews = reviews[best["paper_id"]], reviews[worst["paper_id"]]
        if _standing(best_reviews) == _standing(worst_reviews):
            if len(members) > 1:
                ties.append(
                    f"{len(members)} papers on {group_task} in cycle {round_} of campaign "
                    f"{group_campaign} were reviewed alike (mean rating "
                    f"{_mean(best_reviews, 'rating'):g}): no pair"
                )
            continue
        pairs.append(
            PreferencePair(
                prompt=prompt_of(group_task),
                chosen=_text(best),
                rejected=_text(worst),
                task=group_task,
                campaign=group_campaign,
                round=round_,
                chosen_paper=best["paper_id"],
                rejected_paper=worst["paper_id"],
                chosen_scores=_scores(best_reviews),
                rejected_scores=_scores(worst_reviews),
                chosen_events=_events(best_reviews),
                rejected_events=_events(worst_reviews),
                papers=len(members),
            )
        )
    if not pairs:
        return (
            [],
            "no task and cycle has two papers reviewed differently "
            f"({len(reviewed)} reviewed paper(s) in {len(groups)} task(s) and cycle(s))",
            ties,
        )
    return pairs, None, ties


def _standing(reviews: list[dict[str, Any]]) -> tuple[float, ...]:
    """How well a paper was reviewed: its mean scores in `ORDER`."""
    return tuple(_mean(reviews, score) for score in ORDER)


def _reviews(conn: Connection, paper_ids: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    query = select(REVIEWS).where(REVIEWS.c.paper_id.in_(list(paper_ids)))
    for row in conn.execute(query.order_by(REVIEWS.c.paper_id, REVIEWS.c.number)).mappings():
        out[row["paper_id"]].append(dict(row))
    return dict(out)


def _mean(reviews: list[dict[str, Any]], score: str) -> float:
    return fmean(r[score] for r in reviews)


def _scores(reviews: list[dict[str, Any]]) -> dict[str, float]:
    return {score: _mean(reviews, score) for score in SCORES}


def _events(reviews: list[dict[str, Any]]) -> list[str]:
    paper = [reviews[0]["relied_on"][0]] if reviews[0]["relied_on"] else []
    return [*paper, *(r["event_id"] for r in reviews)]


def _text(paper: dict[str, Any]) -> str:
    return f"# {paper['title']}\n\n{paper['abstract']}\n\n{paper['body']}"
