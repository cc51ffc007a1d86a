"""Finding papers in the archive read model by full-text search (`projections.archive_top`
ranks them by claim).

Full-text ranking is `runstate.bm25` (the labs' `search_archive` tool ranks with the
same module, so a person sees what a lab would have been shown). Corpus statistics (N,
average length, df) are those of the papers searched: the task's when a task is given.

The index (`paper_terms`) is read with plain SQL, and the database ranks: each paper's
score is `bm25.weight` of each query word it holds, as a SQL expression of doubles, added
in the query words' order, so only the page asked for leaves the database. Every step
is one IEEE double operation, as in Python, and the word weights (idf) and the average
length are computed in Python and bound; so SQLite, PostgreSQL and `bm25.score` give the
same floats and the same hits in the same order (a backend's own full-text engine would
not: FTS5 and tsvector stem and weigh differently). Only papers holding at least one
query word are hits; among equal scores the newer paper comes first, as in the labs'
tool.
"""

import functools
import operator
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, Connection, Float, Select, case, cast, func, select

from projections.archive import PAPER_TERMS, PAPERS, SUMMARY_COLUMNS, PaperSummary, summary_of
from projections.archive_pages import PaperFilter, narrowed
from runstate import bm25


@dataclass(frozen=True)
class SearchHit:
    """A paper that matched a query, with its BM25 score."""

    paper: PaperSummary
    score: float


@dataclass(frozen=True)
class SearchPage:
    """One page of a search's hits, best first, and how many papers are hits in all."""

    hits: list[SearchHit]
    total: int


def search_papers(
    conn: Connection, query: str, task: str | None = None, k: int = 10
) -> list[SearchHit]:
    """The `k` papers (of `task`, if given) that best match `query`, best first."""
    return search_page(conn, query, PaperFilter(task=task), 0, k).hits


def search_page(
    conn: Connection, query: str, only: PaperFilter, offset: int, limit: int
) -> SearchPage:
    """The hits of `query` among the papers `only` keeps, best first, from `offset`, at
    most `limit` of them. BM25's corpus is the task's papers (every paper without a
    task): the other filters choose among the hits, they do not change the scores."""
    terms = bm25.query_terms(query)
    corpus = _corpus(conn, terms, only.task) if terms else None
    terms = [term for term in terms if corpus is not None and corpus.df.get(term)]
    if corpus is None or not terms:  # a word no paper holds adds nothing
        return SearchPage([], 0)
    held = _held(terms)
    score = _score(terms, held, corpus).label("score")
    ranking = select(PAPERS.c.paper_id, PAPERS.c.position, score, func.count().over().label("hits"))
    ranking = narrowed(ranking, only).join_from(PAPERS, held, held.c.paper_id == PAPERS.c.paper_id)
    order = (score.desc(), PAPERS.c.position.desc())
    top = ranking.order_by(*order).offset(offset).limit(max(0, limit)).subquery("top")
    page = select(*SUMMARY_COLUMNS, top.c.score, top.c.hits).join_from(
        top, PAPERS, PAPERS.c.paper_id == top.c.paper_id
    )
    rows = conn.execute(page.order_by(top.c.score.desc(), top.c.position.desc())).all()
    if rows:
        total = int(rows[0].hits)
    else:
        counted = narrowed(select(func.count()).select_from(PAPERS), only)
        counted = counted.join_from(PAPERS, held, held.c.paper_id == PAPERS.c.paper_id)
        total = int(conn.execute(counted).scalar_one())
    found = [
        SearchHit(summary_of({c.name: row._mapping[c.name] for c in SUMMARY_COLUMNS}), row.score)
        for row in rows
    ]
    return SearchPage(found, total)


def _corpus(conn: Connection, terms: list[str], task: str | None) -> bm25.Corpus | None:
    """The statistics of the papers searched (None when there are none)."""
    totals = select(func.count(), func.sum(PAPERS.c.length))
    df = select(PAPER_TERMS.c.term, func.count()).where(PAPER_TERMS.c.term.in_(terms))
    if task is not None:
        totals = totals.where(PAPERS.c.task == task)
        df = df.join(PAPERS, PAPERS.c.paper_id == PAPER_TERMS.c.paper_id)
        df = df.where(PAPERS.c.task == task)
    count, length = conn.execute(totals).one()
    if not count:
        return None
    held = {term: int(n) for term, n in conn.execute(df.group_by(PAPER_TERMS.c.term))}
    return bm25.Corpus(count=int(count), length=int(length or 0), df=held)


def _held(terms: list[str]) -> Any:
    """Each paper that holds a query word, with how often it holds each (`tf0`, `tf1`,
    ... in the words' order; NULL for a word it does not hold): for one word, its
    postings as they are."""
    t = PAPER_TERMS.c
    if len(terms) == 1:
        return select(t.paper_id, t.tf.label("tf0")).where(t.term == terms[0]).subquery("held")
    counts = [
        func.max(case((t.term == term, t.tf))).label(f"tf{i}") for i, term in enumerate(terms)
    ]
    query: Select[Any] = select(t.paper_id, *counts).where(t.term.in_(terms))
    return query.group_by(t.paper_id).subquery("held")


def _score(terms: list[str], held: Any, corpus: bm25.Corpus) -> ColumnElement[float]:
    """`bm25.score` of a row of `_held` joined to its paper, as a SQL expression: a word
    a paper does not hold adds 0.0, which leaves a float as it is."""
    length = cast(PAPERS.c.length, Float)
    parts = [
        func.coalesce(
            bm25.weight(
                bm25.idf(corpus.df.get(term, 0), corpus.count),
                cast(held.c[f"tf{i}"], Float),
                length,
                corpus.average,
            ),
            0.0,
        )
        for i, term in enumerate(terms)
    ]
    return functools.reduce(operator.add, parts)
