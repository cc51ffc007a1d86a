"""The archive as labs read it, straight from the log: always current, no projection lag.

Labs in `archive` mode must see each other's papers as soon as they are recorded;
reading `paper.submitted` events from the log gives exactly that. Ranking is BM25
over title, abstract and body; newer papers first among equals.
"""

import math
import re
from collections import Counter
from typing import Any

from events import EventStore
from workers.tools.env import PaperHit

_WORD = re.compile(r"[a-z0-9_]+")


class LogArchive:
    """`Archive` over the `paper.submitted` events of the log."""

    def __init__(self, store: EventStore) -> None:
        self.store = store

    def _papers(self, task: str | None = None) -> list[dict[str, Any]]:
        papers = []
        after = 0
        while True:
            page = self.store.read_records(after=after, limit=2000, types=["paper.submitted"])
            if not page:
                return papers
            for record in page:
                if task is None or record.payload["task"] == task:
                    papers.append({**record.payload, "lab": record.actor or ""})
            after = page[-1].position

    def get(self, paper_id: str) -> dict[str, Any] | None:
        """A paper's submitted payload (plus `lab`), or None."""
        return next((p for p in self._papers() if p["paper_id"] == paper_id), None)

    def search(self, task: str, query: str, k: int) -> list[PaperHit]:
        """The `k` papers on `task` that best match `query` (newest first among equals)."""
        papers = self._papers(task)
        docs = [_tokens(f"{p['title']} {p['abstract']} {p['body']}") for p in papers]
        scores = _bm25(_tokens(query), docs)
        order = sorted(range(len(papers)), key=lambda i: (-scores[i], -i))
        return [
            PaperHit(
                paper_id=papers[i]["paper_id"],
                title=papers[i]["title"],
                abstract=papers[i]["abstract"],
                lab=papers[i]["lab"],
                method=papers[i]["method"],
                claims=papers[i]["claims"],
            )
            for i in order[:k]
        ]


def _tokens(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def _bm25(query: list[str], docs: list[list[str]], k1: float = 1.5, b: float = 0.75) -> list[float]:
    """Okapi BM25 score of every document for the query."""
    if not docs:
        return []
    average = sum(map(len, docs)) / len(docs) or 1.0
    having = Counter(term for doc in docs for term in set(doc))
    scores = []
    for doc in docs:
        counts = Counter(doc)
        score = 0.0
        for term in set(query):
            idf = math.log(1 + (len(docs) - having[term] + 0.5) / (having[term] + 0.5))
            tf = counts[term]
            score += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len(doc) / average))
        scores.append(score)
    return scores
