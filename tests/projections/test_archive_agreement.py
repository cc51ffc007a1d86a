"""The archive read model and the labs' lag-free archive (`LogArchive`) agree: the same
hits in the same order with the same BM25, and the same `verified` / `measured` marks,
incrementally built and rebuilt from the log, on SQLite and PostgreSQL."""

from collections.abc import Iterator
from typing import Any

import pytest
from handmade_log import RunLog, build, interleave, rows

from events import Event
from events.payloads import (
    Claim,
    ExperimentScored,
    ForkPoint,
    PaperSubmitted,
    RunStarted,
    ToolInvoked,
)
from projections.archive import PAPER_CLAIMS, ArchiveProjector, claim_marks
from projections.archive_search import search_papers
from projections.runner import ProjectionRunner
from runstate import bm25
from workers.lab.archive_log import LogArchive
from workers.tools.env import ArchiveScope

LONG = "sha" + "0123456789" * 8  # 83 characters: longer than a term is kept
TEXTS = {
    "p-1": ("Replay with herding", "Herding exemplars.", f"We replay. Checkpoint {LONG}."),
    "p-2": ("Fine-tuning", "No memory.", "Plain fine-tuning, no replay."),
    "p-3": ("Herding herding", "Replay replay replay.", "Long memory of herding."),
    "p-4": ("Cosine classifier", "Nothing shared.", "Saliency maps."),
    "p-5": ("Replay with herding", "Herding exemplars.", f"We replay. Checkpoint {LONG}."),
}


def texts_log() -> list[Event]:
    runs = [RunLog(f"r{i}", f"lab-{i}", campaign="c1") for i in range(len(TEXTS))]
    for run in runs:
        run.start(0)
    for seconds, (run, (paper_id, (title, abstract, body))) in enumerate(
        zip(runs, TEXTS.items(), strict=True), start=1
    ):
        run.paper(paper_id, seconds, title=title, abstract=abstract, body=body)
    return interleave(*runs)


@pytest.fixture
def texts(store_url: str) -> Iterator[ProjectionRunner]:
    runner = build(store_url, texts_log(), step=3)
    yield runner
    runner.store.engine.dispose()


@pytest.mark.parametrize(
    "query",
    ["herding replay", "memory", "Replay!", LONG, LONG + "ffff", LONG[:60], "quantum"],
)
def test_both_searches_rank_the_same_papers_with_the_same_bm25(
    texts: ProjectionRunner, query: str
) -> None:
    """The read model's search (postings from its index) and the labs' tool (the papers'
    texts) score with `runstate.bm25` alike, to the last bit; a word longer than a term is
    cut once, in documents and queries, by both: a query of the long word with more
    characters still finds the papers holding it; its first 60 characters do not."""
    with texts.store.engine.connect() as conn:
        hits = search_papers(conn, query, task="digits", k=100)
    labs = LogArchive(texts.store).search(ArchiveScope("digits"), query, k=100)
    documents = [" ".join(t) for t in TEXTS.values()]
    expected = dict(zip(TEXTS, bm25.rank(query, documents), strict=True))
    matching = [h.paper.paper_id for h in hits]
    assert [h.paper_id for h in labs][: len(matching)] == matching
    assert all(expected[i] == 0 for i in [h.paper_id for h in labs][len(matching) :])
    assert {i for i, s in expected.items() if s > 0} == set(matching)
    for hit in hits:
        assert hit.score == expected[hit.paper.paper_id]  # the same float
    if query.startswith(LONG):
        assert matching == ["p-5", "p-1"], "the newer of equal papers first, in both"
    if query == LONG[:60]:
        assert matching == []


MEASURED = 0.9407407


def claims_log() -> list[Event]:
    """Run a grades attempt 1 (on config A) and writes a paper with a claim stated, one
    overclaimed, one as a percentage, one naming an attempt never graded; a fork of it
    grades attempt 2 and claims both attempts; run b writes a paper with no claim; run a
    grades attempt 2 and writes a second paper (folded on from its first)."""
    a = RunLog("a", "lab-a", campaign="c1")
    f = RunLog("f", "lab-a", campaign="c1")
    b = RunLog("b", "lab-b", campaign="c1")
    a.start(0)
    b.start(0)
    config = {"path": "config.json", "content": '{"method": "replay"}'}
    a.add(ToolInvoked(call_id="w", tool="write_file", args=config), 1)
    a.invoke("e1", "evaluate", 2)
    a.add(ExperimentScored(attempt=1, subtask_scores={"accuracy": MEASURED}, score=MEASURED), 3)
    a.add(paper("p-a", [(0.94, 1), (0.95, 1), (94.07, 1), (0.9, 2)]), 4)
    fork_point = a.events[3].version  # after attempt 1 was graded
    f.add(
        RunStarted(
            task="digits",
            lab="lab-a",
            policy="handmade",
            forked_from=ForkPoint(run="run-a", version=fork_point, step=1),
        ),
        5,
    )
    f.invoke("e2", "evaluate", 6)
    f.add(ExperimentScored(attempt=2, subtask_scores={"accuracy": 0.8}, score=0.8), 7)
    f.add(paper("p-f", [(0.9407, 1), (80, 2), (0.81, 2)]), 8)
    b.add(paper("p-b", []), 9)
    a.invoke("e3", "evaluate", 10)
    a.add(ExperimentScored(attempt=2, subtask_scores={"accuracy": 0.7}, score=0.7), 11)
    a.add(paper("p-a2", [(0.7, 2), (0.94, 1), (0.7, 3)]), 12)
    return interleave(a, f, b)


def paper(paper_id: str, claims: list[tuple[float, int]]) -> PaperSubmitted:
    return PaperSubmitted(
        paper_id=paper_id,
        task="digits",
        title=paper_id,
        abstract="",
        body="",
        claims=[
            Claim(subtask="accuracy", metric="accuracy", value=v, attempt=i) for v, i in claims
        ],
    )


EXPECTED = {
    "p-a": [(True, MEASURED), (False, None), (True, MEASURED), (False, None)],
    "p-f": [(True, MEASURED), (True, 0.8), (False, None)],
    "p-b": [],
    "p-a2": [(True, 0.7), (True, MEASURED), (False, None)],
}


def marks_of(runner: ProjectionRunner) -> dict[str, list[tuple[bool, float | None]]]:
    with runner.store.engine.connect() as conn:
        found = claim_marks(conn, list(EXPECTED))
    return {i: [(m.verified, m.measured) for m in marks] for i, marks in found.items()}


@pytest.mark.parametrize("step", [1, 2, 3, 5, None])
def test_the_read_models_marks_are_the_labs_incremental_and_rebuilt(
    store_url: str, step: int | None
) -> None:
    """Built in pages of `step` events (None: one page): an author's events before a
    paper are in its page, in earlier pages, or both."""
    runner = build(store_url, claims_log(), step=step)
    try:
        assert marks_of(runner) == EXPECTED
        labs = LogArchive(runner.store)
        for paper_id, expected in EXPECTED.items():
            checked: dict[str, Any] | None = labs.get(paper_id)
            assert checked is not None
            assert [(c["verified"], c["measured"]) for c in checked["claims"]] == expected
        incremental = rows(runner.store, PAPER_CLAIMS)
        runner.rebuild()
        assert rows(runner.store, PAPER_CLAIMS) == incremental
        fresh = ProjectionRunner(runner.store, [ArchiveProjector()])  # nothing kept
        fresh.rebuild()
        assert rows(runner.store, PAPER_CLAIMS) == incremental
        assert marks_of(runner) == EXPECTED
    finally:
        runner.store.engine.dispose()
