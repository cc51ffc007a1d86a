"""Finding papers in the archive read model: full-text search and top papers by claim.

Full-text ranking is Okapi BM25 (k1 = 1.5, b = 0.75) over a paper's title, abstract
and body taken as one document, with idf(t) = ln(1 + (N − df + 0.5) / (df + 0.5)):
the same words and the same formula the labs' `search_archive` tool ranks with, so
a person sees what a lab would have been shown. Corpus statistics (N, average
length, df) are those of the papers searched: the task's when a task is given.

The index (`paper_terms`) is read with plain SQL and every score is computed in
Python from integers, so SQLite and PostgreSQL give the same hits in the same order
(a backend's own full-text engine would not: FTS5 and tsvector stem and weigh
differently). Only papers holding at least one query word are hits; among equal
scores the newer paper comes first, as in the labs' tool.
"""

import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Literal

from sqlalchemy import Connection, func, select

from projections.archive import (
    PAPER_CLAIMS,
    PAPER_TERMS,
    PAPERS,
    PaperSummary,
    papers_by_id,
)
from projections.text import words

K1 = 1.5
"""BM25 term-frequency saturation."""
B = 0.75
"""BM25 length normalization."""


@dataclass(frozen=True)
class SearchHit:
    """A paper that matched a query, with its BM25 score."""

    paper: PaperSummary
    score: float


@dataclass(frozen=True)
class ClaimedPaper:
    """A paper ranked by one of its claims."""

    paper: PaperSummary
    subtask: str
    metric: str
    value: float


def search_papers(
    conn: Connection, query: str, task: str | None = None, k: int = 10
) -> list[SearchHit]:
    """The `k` papers (of `task`, if given) that best match `query`, best first."""
    terms = sorted(set(words(query)))
    if not terms or k < 1:
        return []
    corpus = select(func.count(), func.sum(PAPERS.c.length))
    postings = (
        select(PAPER_TERMS.c.paper_id, PAPER_TERMS.c.term, PAPER_TERMS.c.tf, PAPERS.c.length)
        .join(PAPERS, PAPERS.c.paper_id == PAPER_TERMS.c.paper_id)
        .where(PAPER_TERMS.c.term.in_(terms))
    )
    if task is not None:
        corpus = corpus.where(PAPERS.c.task == task)
        postings = postings.where(PAPERS.c.task == task)
    count, total = conn.execute(corpus).one()
    if not count:
        return []
    average = int(total or 0) / int(count) or 1.0
    rows = conn.execute(postings).all()
    df: dict[str, int] = defaultdict(int)
    for row in rows:
        df[row.term] += 1
    by_paper: dict[str, dict[str, tuple[int, int]]] = defaultdict(dict)
    for row in rows:
        by_paper[row.paper_id][row.term] = (int(row.tf), int(row.length))
    scores = {
        paper_id: _bm25(found, terms, df, int(count), average)
        for paper_id, found in by_paper.items()
    }
    papers = papers_by_id(conn, list(scores))
    ranked = sorted(scores, key=lambda i: (-scores[i], -papers[i].position))
    return [SearchHit(papers[i], scores[i]) for i in ranked[:k]]


def _bm25(
    found: dict[str, tuple[int, int]],
    terms: list[str],
    df: dict[str, int],
    count: int,
    average: float,
) -> float:
    score = 0.0
    for term in terms:  # sorted: the float sum is the same on every run
        if term not in found:
            continue
        tf, length = found[term]
        idf = math.log(1 + (count - df[term] + 0.5) / (df[term] + 0.5))
        score += idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * length / average))
    return score


def recorded_direction(
    conn: Connection, task: str, subtask: str | None = None
) -> Literal["maximize", "minimize"] | None:
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
    direction: Literal["maximize", "minimize"] = "maximize",
) -> list[ClaimedPaper]:
    """The `k` papers of `task` (None: all) with the best claimed value on `subtask`.

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
    best: dict[str, tuple[str, str, float]] = {}
    for row in conn.execute(query):
        if row.paper_id not in best:
            best[row.paper_id] = (row.subtask, row.metric, float(row.value))
            if len(best) == k:
                break
    papers = papers_by_id(conn, list(best))
    return [ClaimedPaper(papers[i], *best[i]) for i in best]
