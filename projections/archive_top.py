"""The archive's top papers on a task: ranked by a claim, as claimed or as measured.

`top_papers` ranks each paper by its best claimed value on a subtask (its headline
claim by default). `ranked_as_measured` re-ranks those by what the grader measured,
from the `verified` and `measured` marks the archive projector folds
(`runstate.verification`): a verified claim ranks at the grader's value it states (a
percentage as its fraction), any other as claimed and shown unverified; with
`verified_only`, each paper ranks by its best verified claim and a paper with none is
left out. Among equal values the earlier paper comes first (it got there first).

A subtask's direction is the one its claims recorded from the task card
(`recorded_direction`); the caller decides what to use when the log recorded none.
"""

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import Connection, select

from events.payloads.experiment import Direction
from projections.archive import (
    PAPER_CLAIMS,
    PAPERS,
    ClaimMark,
    PaperSummary,
    claim_marks,
    papers_by_id,
)
from runstate.best import best_of, first_key


@dataclass(frozen=True)
class ClaimedPaper:
    """A paper ranked by one of its claims."""

    paper: PaperSummary
    subtask: str
    metric: str
    value: float


@dataclass(frozen=True)
class RankedPaper(ClaimedPaper):
    """A paper ranked by one of its claims, with whether the log verifies that claim."""

    verified: bool


def recorded_direction(conn: Connection, task: str, subtask: str | None = None) -> Direction | None:
    """Which way the papers' claims on `subtask` (None: their headline claims) say it is
    better, as their events recorded it from the task card; None when no claim records
    one, or claims disagree (headlines on subtasks of both kinds)."""
    query = (
        select(PAPER_CLAIMS.c.direction)
        .join(PAPERS, PAPERS.c.paper_id == PAPER_CLAIMS.c.paper_id)
        .where(PAPERS.c.task == task, PAPER_CLAIMS.c.direction.is_not(None))
        .distinct()
    )
    if subtask is None:
        query = query.where(PAPER_CLAIMS.c.claim_index == 0)
    else:
        query = query.where(PAPER_CLAIMS.c.subtask == subtask)
    found = set(conn.execute(query).scalars())
    if len(found) != 1:
        return None
    return "minimize" if found == {"minimize"} else "maximize"


def top_papers(
    conn: Connection,
    task: str,
    k: int | None = 10,
    subtask: str | None = None,
    direction: Direction = "maximize",
    campaign: str | None = None,
) -> list[ClaimedPaper]:
    """The `k` papers of `task` (None: all; of `campaign`, if given) with the best
    claimed value on `subtask`.

    `subtask=None` ranks each paper by its headline (first) claim. `direction` is the
    subtask's (`recorded_direction` says what the log recorded). A paper claiming the
    subtask twice counts with its better value; among equal values the earlier paper
    comes first (it got there first). Papers with no such claim are left out.
    """
    if k is not None and k < 1:
        return []
    value = PAPER_CLAIMS.c.value
    query = (
        select(PAPER_CLAIMS.c.paper_id, PAPER_CLAIMS.c.subtask, PAPER_CLAIMS.c.metric, value)
        .join(PAPERS, PAPERS.c.paper_id == PAPER_CLAIMS.c.paper_id)
        .where(PAPERS.c.task == task)
        .order_by(value.desc() if direction == "maximize" else value.asc(), PAPERS.c.position)
    )
    if subtask is None:
        query = query.where(PAPER_CLAIMS.c.claim_index == 0)
    else:
        query = query.where(PAPER_CLAIMS.c.subtask == subtask)
    if campaign is not None:
        query = query.where(PAPERS.c.campaign == campaign)
    best: dict[str, tuple[str, str, float]] = {}
    for row in conn.execute(query):
        if row.paper_id not in best:
            best[row.paper_id] = (row.subtask, row.metric, float(row.value))
            if len(best) == k:
                break
    papers = papers_by_id(conn, list(best))
    return [ClaimedPaper(papers[i], *best[i]) for i in best]


def ranked_as_measured(
    conn: Connection,
    claimed: Sequence[ClaimedPaper],
    direction: Direction,
    verified_only: bool = False,
    k: int | None = None,
) -> list[RankedPaper]:
    """The `k` best (None: all) of `claimed` (`top_papers`), each at the grader's value of
    its ranked claim when the log verifies it, else as claimed; with `verified_only`,
    each at the grader's value of its best verified claim on the subtask (a paper whose
    best claim is inflated still ranks by a lower one it measured), those with none
    left out. Best first in `direction`, the earlier paper first among equals."""
    marks = claim_marks(conn, [item.paper.paper_id for item in claimed])
    placed = []
    for item in claimed:
        stated = _verified_claims(marks.get(item.paper.paper_id, []), item.subtask)
        if verified_only:
            best = best_of(direction, (m for _, m in stated))
            if best is not None:
                placed.append(_ranked(item, best, verified=True))
        else:
            value = dict(stated).get(item.value, item.value)
            placed.append(_ranked(item, value, any(value in pair for pair in stated)))
    placed.sort(key=lambda item: (first_key(direction, item.value), item.paper.position))
    return placed if k is None else placed[:k]


def _verified_claims(marks: Sequence[ClaimMark], subtask: str) -> list[tuple[float, float]]:
    """The claims on `subtask` that the log verifies: (the value as claimed, the grader's
    value it states)."""
    return [
        (c.value, c.measured)
        for c in marks
        if c.verified and c.measured is not None and c.subtask == subtask
    ]


def _ranked(item: ClaimedPaper, value: float, verified: bool) -> RankedPaper:
    return RankedPaper(item.paper, item.subtask, item.metric, value, verified)
