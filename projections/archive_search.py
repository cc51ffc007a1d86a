"""Finding papers in the archive read model by full-text search (`projections.archive_top`
ranks them by claim).

Full-text ranking is `runstate.bm25` (the labs' `search_archive` tool ranks with the
same module, so a person sees what a lab would have been shown). Corpus statistics (N,
average length, df) are those of the papers searched: the task's when a task is given.

The index (`paper_terms`) is read with plain SQL and every score is computed in
Python from integers, so SQLite and PostgreSQL give the same hits in the same order
(a backend's own full-text engine would not: FTS5 and tsvector stem and weigh
differently). Only papers holding at least one query word are hits; among equal
scores the newer paper comes first, as in the labs' tool.
"""

from collections import defaultdict
from dataclasses import dataclass

from sqlalchemy import Connection, func, select

from projections.archive import (
    PAPER_TERMS,
    PAPERS,
    PaperSummary,
    papers_by_id,
)
from runstate import bm25


@dataclass(frozen=True)
class SearchHit:
    """A paper that matched a query, with its BM25 score."""

    paper: PaperSummary
    score: float


def search_papers(
    conn: Connection, query: str, task: str | None = None, k: int = 10
) -> list[SearchHit]:
    """The `k` papers (of `task`, if given) that best match `query`, best first."""
    terms = bm25.query_terms(query)
    if not terms or k < 1:
        return []
    totals = select(func.count(), func.sum(PAPERS.c.length))
    postings = (
        select(PAPER_TERMS.c.paper_id, PAPER_TERMS.c.term, PAPER_TERMS.c.tf, PAPERS.c.length)
        .join(PAPERS, PAPERS.c.paper_id == PAPER_TERMS.c.paper_id)
        .where(PAPER_TERMS.c.term.in_(terms))
    )
    if task is not None:
        totals = totals.where(PAPERS.c.task == task)
        postings = postings.where(PAPERS.c.task == task)
    count, length = conn.execute(totals).one()
    if not count:
        return []
    rows = conn.execute(postings).all()
    df: dict[str, int] = defaultdict(int)
    for row in rows:
        df[row.term] += 1
    corpus = bm25.Corpus(count=int(count), length=int(length or 0), df=df)
    found: dict[str, dict[str, int]] = defaultdict(dict)
    lengths: dict[str, int] = {}
    for row in rows:
        found[row.paper_id][row.term] = int(row.tf)
        lengths[row.paper_id] = int(row.length)
    scores = {i: bm25.score(terms, tf, lengths[i], corpus) for i, tf in found.items()}
    papers = papers_by_id(conn, list(scores))
    ranked = sorted(scores, key=lambda i: (-scores[i], -papers[i].position))
    return [SearchHit(papers[i], scores[i]) for i in ranked[:k]]
