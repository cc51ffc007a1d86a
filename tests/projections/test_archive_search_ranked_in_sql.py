"""The archive's search ranks in the database: on a random corpus, every page of its hits
is the plain formula's ranking (`bm25.rank` over the papers' texts, as the labs' tool
computes it), the same scores to the last bit, on SQLite and PostgreSQL.

The corpus draws from a small vocabulary, with repeated texts, so it holds equal scores
(ordered newer first) and many near ties."""

import random

import pytest
from handmade_log import RunLog, build, interleave

from projections.archive_pages import PaperFilter
from projections.archive_search import SearchPage, search_page, search_papers
from runstate import bm25

VOCABULARY = "replay herding memory forgetting drift cosine ncm saliency prune a the".split()
TASKS = ("digits", "cifar")


def _text(rng: random.Random) -> tuple[str, str, str]:
    def words(most: int) -> str:
        return " ".join(rng.choices(VOCABULARY, k=rng.randint(0, most)))

    return words(4) or "untitled", words(8), words(30)


def _corpus(seed: int) -> tuple[list[RunLog], dict[str, dict[str, str | int]]]:
    """Four runs (two campaigns, two tasks) submitting 120 papers in turn; each paper's
    task, campaign, text and order of submission."""
    rng = random.Random(seed)
    runs = [RunLog(f"r{i}", f"lab-{i}", campaign=f"c{i % 2}", task=TASKS[i // 2]) for i in range(4)]
    for run in runs:
        run.start(0)
    papers: dict[str, dict[str, str | int]] = {}
    earlier: list[tuple[str, str, str]] = []
    for n in range(120):
        run = runs[n % 4]
        text = rng.choice(earlier) if earlier and rng.random() < 0.3 else _text(rng)
        earlier.append(text)
        paper_id = f"p-{n:03d}"
        title, abstract, body = text
        run.paper(paper_id, 1 + n, title=title, abstract=abstract, body=body)
        papers[paper_id] = {
            "task": run.task,
            "campaign": run.campaign or "",
            "text": f"{title} {abstract} {body}",
            "order": n,
        }
    return runs, papers


def _expected(
    papers: dict[str, dict[str, str | int]], query: str, only: PaperFilter
) -> list[tuple[str, float]]:
    """Every hit of `query` with its score by the plain formula, best first."""
    searched = [i for i, p in papers.items() if only.task is None or p["task"] == only.task]
    scores = bm25.rank(query, [str(papers[i]["text"]) for i in searched])
    terms = set(bm25.query_terms(query))
    hits = [
        (i, s)
        for i, s in zip(searched, scores, strict=True)
        if terms & set(bm25.words(str(papers[i]["text"])))
        and (only.campaign is None or papers[i]["campaign"] == only.campaign)
    ]
    return sorted(hits, key=lambda h: (-h[1], -int(papers[h[0]]["order"])))


def test_every_page_of_hits_is_the_plain_formulas_ranking(store_url: str) -> None:
    runs, papers = _corpus(seed=34)
    for run in runs:
        run.finish(500)
    runner = build(store_url, interleave(*runs))
    rng = random.Random(7)
    queries = ["replay", "the", "a the", "quantum", "quantum memory", "ncm-saliency prune"]
    queries += [" ".join(rng.sample(VOCABULARY, rng.randint(1, 5))) for _ in range(12)]
    filters = [PaperFilter(), PaperFilter(task="digits"), PaperFilter("cifar", campaign="c1")]
    with runner.store.engine.connect() as conn:
        for query in queries:
            for only in filters:
                expected = _expected(papers, query, only)
                for offset, limit in ((0, 1), (0, 10), (3, 7), (0, 500), (len(expected), 5)):
                    page = search_page(conn, query, only, offset, limit)
                    got = [(h.paper.paper_id, h.score) for h in page.hits]
                    assert got == expected[offset : offset + limit], (query, only, offset)
                    assert page.total == len(expected)
            top = [(h.paper.paper_id, h.score) for h in search_papers(conn, query, k=5)]
            assert top == _expected(papers, query, PaperFilter())[:5]
    tied = [_expected(papers, q, PaperFilter()) for q in queries]
    assert any(len({s for _, s in hits}) < len(hits) for hits in tied)  # equal scores met


@pytest.mark.parametrize("query", ["", "  ...  ", "-"])
def test_a_query_of_no_words_has_no_hits(store_url: str, query: str) -> None:
    run = RunLog("one", "lab-one")
    run.start(0)
    run.paper("p-only", 1, title="replay")
    runner = build(store_url, run.events)
    with runner.store.engine.connect() as conn:
        assert search_page(conn, query, PaperFilter(), 0, 10) == SearchPage([], 0)


def test_a_query_of_thousands_of_words_ranks_as_the_plain_formula(store_url: str) -> None:
    """A pasted paper is a query too: its words past `bm25.MAX_QUERY_TERMS` do not count,
    and words no paper holds add nothing, in the database as in the formula."""
    runs, papers = _corpus(seed=35)
    for run in runs:
        run.finish(500)
    runner = build(store_url, interleave(*runs))
    unknown = [f"w{n:04d}" for n in range(1200)]
    query = " ".join([*VOCABULARY, *unknown])
    assert len(bm25.query_terms(query)) == bm25.MAX_QUERY_TERMS
    with runner.store.engine.connect() as conn:
        page = search_page(conn, query, PaperFilter(), 0, 10)
        expected = _expected(papers, query, PaperFilter())
        assert [(h.paper.paper_id, h.score) for h in page.hits] == expected[:10]
        assert page.total == len(expected) > 0
        assert search_page(conn, "replay", PaperFilter(), 0, -1).hits == []
