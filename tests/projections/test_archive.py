"""The archive read model: papers, versions, claims, lineage, full-text search, top papers.

Every test runs on SQLite and PostgreSQL with the same expectations, so both backends
give the same rows, the same search hits and the same ranking.
"""

import math
import re
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from handmade_log import RunLog, build, interleave, rows, snapshot

from events import Event
from projections.archive import (
    PAPER_CITATIONS,
    PAPER_CLAIMS,
    PAPER_RETRIEVALS,
    PAPERS,
    ArchiveProjector,
    get_paper,
    list_papers,
)
from projections.archive_search import search_papers
from projections.archive_top import Direction, ranked_as_measured, top_papers
from projections.runner import ProjectionRunner

TEXTS = {
    "p-a1": ("Replay with herding exemplars", "Replay memory chosen by herding.", "We replay."),
    "p-b1": ("Fine-tuning baseline", "Plain fine-tuning.", "No replay at all, no memory."),
    "p-a2": ("Replay with herding, revised", "Herding beats random.", "Herding herding replay."),
    "p-a3": ("Smaller forgetting", "A cosine classifier.", "Forgetting drops with NCM."),
    "p-c1": ("Other task replay", "Replay elsewhere.", "Saliency maps."),
}


def archive_log() -> list[Event]:
    """Two labs of campaign c1 on `digits`, a lone run on `other`, and a duplicate id."""
    a = RunLog("a", "lab-a", campaign="c1")
    b = RunLog("b", "lab-b", campaign="c1")
    c = RunLog("c", "lab-c", task="other")
    d = RunLog("d", "lab-d", campaign="c1")
    for run in (a, b, c, d):
        run.start(0)

    def paper(run: RunLog, paper_id: str, seconds: float, **kwargs: Any) -> None:
        title, abstract, body = TEXTS[paper_id]
        run.paper(paper_id, seconds, title=title, abstract=abstract, body=body, **kwargs)

    paper(a, "p-a1", 10, claims=[("final_accuracy", 0.5, 1), ("forgetting", 0.3, 1)])
    b.retrieved("replay", ["p-a1"], 12)
    paper(b, "p-b1", 20, claims=[("final_accuracy", 0.5, 1)], cited=["p-a1", "p-missing", "p-a1"])
    paper(a, "p-a2", 30, claims=[("final_accuracy", 0.7, 2)], cited=["p-a1"], revises="p-a1")
    paper(a, "p-a3", 40, claims=[("forgetting", 0.1, 3)], revises="p-a2")
    b.retrieved("read p-a2", ["p-a2"], 45)
    b.retrieved("herding", ["p-a3", "p-a2", "p-a1"], 46)
    paper(c, "p-c1", 50, claims=[("final_accuracy", 0.9, None)])
    d.paper("p-a1", 60, title="a second paper under a taken id")
    return interleave(a, b, c, d)


@pytest.fixture
def archive(store_url: str) -> Iterator[ProjectionRunner]:
    """The archive built across many page boundaries."""
    runner = build(store_url, archive_log(), step=2)
    yield runner
    runner.store.engine.dispose()


def test_papers_versions_and_authorship(archive: ProjectionRunner) -> None:
    papers = {r["paper_id"]: r for r in rows(archive.store, PAPERS)}
    assert set(papers) == {"p-a1", "p-b1", "p-a2", "p-a3", "p-c1"}
    expected = {
        # id: (run, lab, campaign, task, version, revises, number in run)
        "p-a1": ("run-a", "lab-a", "c1", "digits", 1, None, 1),
        "p-b1": ("run-b", "lab-b", "c1", "digits", 1, None, 1),
        "p-a2": ("run-a", "lab-a", "c1", "digits", 2, "p-a1", 2),
        "p-a3": ("run-a", "lab-a", "c1", "digits", 3, "p-a2", 3),
        "p-c1": ("run-c", "lab-c", None, "other", 1, None, 1),
    }
    for paper_id, values in expected.items():
        row = papers[paper_id]
        keys = ("run", "lab", "campaign", "task", "version", "revises", "number_in_run")
        assert tuple(row[k] for k in keys) == values, paper_id
    # The duplicate id from run d did not replace the first submission.
    assert papers["p-a1"]["title"] == TEXTS["p-a1"][0]
    assert papers["p-a1"]["claims"] == [
        {"subtask": "final_accuracy", "metric": "final_accuracy", "value": 0.5, "attempt": 1}
        | {"direction": None},
        {"subtask": "forgetting", "metric": "forgetting", "value": 0.3, "attempt": 1}
        | {"direction": None},
    ]
    assert papers["p-a1"]["length"] == 4 + 5 + 2  # words of title, abstract and body


def test_claims_citations_and_retrievals(archive: ProjectionRunner) -> None:
    keys = ("paper_id", "claim_index", "subtask", "value", "attempt")
    claims = [tuple(r[k] for k in keys) for r in rows(archive.store, PAPER_CLAIMS)]
    assert claims == [
        ("p-a1", 0, "final_accuracy", 0.5, 1),
        ("p-a1", 1, "forgetting", 0.3, 1),
        ("p-a2", 0, "final_accuracy", 0.7, 2),
        ("p-a3", 0, "forgetting", 0.1, 3),
        ("p-b1", 0, "final_accuracy", 0.5, 1),
        ("p-c1", 0, "final_accuracy", 0.9, None),
    ]
    citations = [
        (r["paper_id"], r["cited_id"], r["rank"]) for r in rows(archive.store, PAPER_CITATIONS)
    ]
    assert citations == [("p-a2", "p-a1", 1), ("p-b1", "p-a1", 1), ("p-b1", "p-missing", 2)]
    keys = ("run", "lab", "campaign", "query", "rank", "paper_id")
    retrievals = [tuple(r[k] for k in keys) for r in rows(archive.store, PAPER_RETRIEVALS)]
    assert retrievals == [
        ("run-b", "lab-b", "c1", "replay", 1, "p-a1"),
        ("run-b", "lab-b", "c1", "read p-a2", 1, "p-a2"),
        ("run-b", "lab-b", "c1", "herding", 1, "p-a3"),
        ("run-b", "lab-b", "c1", "herding", 2, "p-a2"),
        ("run-b", "lab-b", "c1", "herding", 3, "p-a1"),
    ]


def test_get_paper_shows_lineage_both_ways(archive: ProjectionRunner) -> None:
    with archive.store.engine.connect() as conn:
        first = get_paper(conn, "p-a1")
        reader = get_paper(conn, "p-b1")
        assert get_paper(conn, "p-nope") is None
    assert first is not None and reader is not None
    assert first.cites == []
    assert [p.paper_id for p in first.cited_by] == ["p-b1", "p-a2"]
    assert [p.paper_id for p in first.revisions] == ["p-a2"]
    assert [(r.run, r.query, r.rank) for r in first.retrievals] == [
        ("run-b", "replay", 1),
        ("run-b", "herding", 3),
    ]
    assert first.retrievals[0].at.isoformat() == "2026-03-01T09:00:12+00:00"
    assert first.body == TEXTS["p-a1"][2] and first.number_in_run == 1
    assert reader.cites == [("p-a1", TEXTS["p-a1"][0]), ("p-missing", None)]
    assert reader.paper.submitted_at.isoformat() == "2026-03-01T09:00:20+00:00"


def test_list_papers_by_task_campaign_and_lab(archive: ProjectionRunner) -> None:
    with archive.store.engine.connect() as conn:
        ids = lambda **kw: [p.paper_id for p in list_papers(conn, **kw)]  # noqa: E731
        assert ids() == ["p-a1", "p-b1", "p-a2", "p-a3", "p-c1"]
        assert ids(task="digits") == ["p-a1", "p-b1", "p-a2", "p-a3"]
        assert ids(campaign="c1") == ["p-a1", "p-b1", "p-a2", "p-a3"]
        assert ids(lab="lab-c") == ["p-c1"]
        assert ids(task="nothing") == []


def reference_bm25(query: str, ids: list[str]) -> dict[str, float]:
    """BM25 (k1 1.5, b 0.75) written out again, independently of the projector's index."""
    tokens = {i: re.findall(r"[a-z0-9_]+", " ".join(TEXTS[i]).lower()) for i in ids}
    average = sum(map(len, tokens.values())) / len(tokens)
    terms = set(re.findall(r"[a-z0-9_]+", query.lower()))
    df = {t: sum(t in doc for doc in tokens.values()) for t in terms}
    scores = {}
    for i, doc in tokens.items():
        counts = Counter(doc)
        score = 0.0
        for t in sorted(terms):
            if counts[t]:
                idf = math.log(1 + (len(ids) - df[t] + 0.5) / (df[t] + 0.5))
                score += (
                    idf * counts[t] * 2.5 / (counts[t] + 1.5 * (0.25 + 0.75 * len(doc) / average))
                )
        if score > 0:
            scores[i] = score
    return scores


def test_search_ranks_by_bm25_the_same_on_both_backends(archive: ProjectionRunner) -> None:
    digits = ["p-a1", "p-b1", "p-a2", "p-a3"]
    with archive.store.engine.connect() as conn:
        hits = search_papers(conn, "Herding replay!", task="digits")
        expected = reference_bm25("herding replay", digits)
        assert [h.paper.paper_id for h in hits] == sorted(expected, key=lambda i: -expected[i])
        assert [h.paper.paper_id for h in hits] == ["p-a2", "p-a1", "p-b1"]
        for hit in hits:
            assert hit.score == pytest.approx(expected[hit.paper.paper_id], rel=1e-12)
        # Without a task the other task's paper matches too, and statistics change.
        everywhere = search_papers(conn, "replay")
        assert {h.paper.paper_id for h in everywhere} == {"p-a1", "p-b1", "p-a2", "p-c1"}
        assert [h.paper.paper_id for h in search_papers(conn, "replay", k=2)] == [
            h.paper.paper_id for h in everywhere[:2]
        ]
        assert search_papers(conn, "quantum") == []
        assert search_papers(conn, "  ...  ") == []
        assert [h.paper.paper_id for h in search_papers(conn, "ncm", task="digits")] == ["p-a3"]


def test_search_puts_the_newer_of_equal_papers_first(store_url: str) -> None:
    run = RunLog("twin", "lab-t")
    run.start(0)
    run.paper("p-old", 1, title="same words", body="exactly the same")
    run.paper("p-new", 2, title="same words", body="exactly the same")
    runner = build(store_url, run.events)
    with runner.store.engine.connect() as conn:
        hits = search_papers(conn, "same words")
    assert [h.paper.paper_id for h in hits] == ["p-new", "p-old"]
    assert hits[0].score == hits[1].score


def test_top_papers_by_claimed_value(archive: ProjectionRunner) -> None:
    with archive.store.engine.connect() as conn:

        def top(**kw: Any) -> list[tuple[str, str, float]]:
            return [(t.paper.paper_id, t.subtask, t.value) for t in top_papers(conn, **kw)]

        # Headline (first) claims; the tie at 0.5 goes to the earlier paper.
        assert top(task="digits") == [
            ("p-a2", "final_accuracy", 0.7),
            ("p-a1", "final_accuracy", 0.5),
            ("p-b1", "final_accuracy", 0.5),
            ("p-a3", "forgetting", 0.1),
        ]
        assert top(task="digits", k=2, subtask="final_accuracy") == [
            ("p-a2", "final_accuracy", 0.7),
            ("p-a1", "final_accuracy", 0.5),
        ]
        assert top(task="digits", subtask="forgetting", direction="minimize") == [
            ("p-a3", "forgetting", 0.1),
            ("p-a1", "forgetting", 0.3),
        ]
        assert top(task="other") == [("p-c1", "final_accuracy", 0.9)]
        assert top(task="digits", subtask="nothing") == []


def test_rebuild_equals_the_incremental_archive(archive: ProjectionRunner) -> None:
    tables = ArchiveProjector().tables
    incremental = snapshot(archive.store, tables)
    assert all(incremental.values())
    archive.rebuild()
    assert snapshot(archive.store, tables) == incremental


def test_top_papers_ranked_as_the_grader_measured(store_url: str) -> None:
    """A verified claim ranks at the grader's value (a percentage as its fraction), an
    inflated one as claimed and unverified; `verified_only` ranks each paper by its best
    verified claim and leaves out a paper with none, in the subtask's direction."""
    x, y, z, w = (RunLog(r, f"lab-{r}") for r in "xyzw")
    for seconds, (run, measured) in enumerate(((x, 0.6), (y, 0.8), (z, 0.7))):
        run.start(0)
        run.invoke("c1", "evaluate", 1 + seconds)
        run.score(1, measured, None, 1 + seconds)
    w.start(0)
    x.paper("p-x", 10, claims=[("accuracy", 0.9, 1), ("accuracy", 0.6, 1)])
    y.paper("p-y", 11, claims=[("accuracy", 80, 1)])
    z.paper("p-z", 12, claims=[("accuracy", 0.7, 1)])
    w.paper("p-w", 13, claims=[("accuracy", 0.75, 1)])
    runner = build(store_url, interleave(x, y, z, w), step=3)
    with runner.store.engine.connect() as conn:

        def top(direction: Direction, **kw: Any) -> list[tuple[str, float, bool]]:
            claimed = top_papers(conn, "digits", k=None, subtask="accuracy", direction=direction)
            ranked = ranked_as_measured(conn, claimed, direction, **kw)
            return [(r.paper.paper_id, r.value, r.verified) for r in ranked]

        assert top("maximize") == [
            ("p-x", 0.9, False),
            ("p-y", 0.8, True),
            ("p-w", 0.75, False),
            ("p-z", 0.7, True),
        ]
        assert top("maximize", verified_only=True) == [
            ("p-y", 0.8, True),
            ("p-z", 0.7, True),
            ("p-x", 0.6, True),
        ]
        assert top("maximize", verified_only=True, k=2) == [("p-y", 0.8, True), ("p-z", 0.7, True)]
        assert top("minimize", verified_only=True) == [
            ("p-x", 0.6, True),
            ("p-z", 0.7, True),
            ("p-y", 0.8, True),
        ]
    runner.store.engine.dispose()
