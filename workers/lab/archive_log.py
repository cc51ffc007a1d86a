"""The archive as labs read it, straight from the log: always current, no projection lag.

Labs in `archive` mode must see each other's papers as soon as they are recorded;
reading `paper.submitted` events from the log gives exactly that. A lab reads the
papers of its own campaign (by the events' correlation id), so a campaign's budget is
all it learns from: an archive campaign run after an isolated one on the same data
does not start from the isolated labs' papers.

What this gives a lab that the archive read model (`projections.archive`) cannot is a
view without the projector's lag: a paper recorded a moment ago is already here. The
rules are the read model's. Ranking is `runstate.bm25` over title, abstract and body,
over the papers searched; newer papers first among equals, and a search returns up to
`k` papers even when fewer hold a query word (a lab asking for ideas still gets the
latest). Every claim and every reported experiment a paper shows carries `verified` and
`measured` (`runstate.verification`; the read model stores the claims' marks): a reader
may trust a verified number without measuring it again.
"""

import threading
from typing import Any

from events import EventStore
from events.payloads import PaperDecided, ReviewStopped, ReviewSubmitted
from events.streams import review_stream
from runstate import bm25, loader
from runstate.verification import checked_claims, checked_experiments, graded_before
from workers.tools.env import ArchiveScope, PaperHit, PaperReviews


class LogArchive:
    """`Archive` over the `paper.submitted` events of the log.

    Papers are read once, incrementally by log position (positions are committed in
    order, so a later read never misses an earlier paper), and each paper's verification
    is computed once: it depends only on its author's events before it, which never
    change. One instance serves a worker's threads."""

    def __init__(self, store: EventStore) -> None:
        self.store = store
        self._lock = threading.Lock()
        self._read_to = 0
        self._all: list[dict[str, Any]] = []
        self._by_id: dict[str, dict[str, Any]] = {}
        self._checked: dict[str, dict[str, Any]] = {}
        self._accepted: set[str] = set()

    def _papers(self, task: str | None = None, campaign: str | None = None) -> list[dict[str, Any]]:
        with self._lock:
            types = ["paper.submitted", "paper.decided"]
            for record in self.store.iter_records(self._read_to, types=types):
                self._read_to = record.position
                if record.type == "paper.decided":
                    if record.payload["decision"] == "accept":
                        self._accepted.add(record.payload["paper_id"])
                    continue
                paper = {
                    **record.payload,
                    "lab": record.actor or "",
                    "run": record.stream,
                    "version": record.version,
                    "campaign": record.correlation_id,
                }
                self._all.append(paper)
                self._by_id.setdefault(paper["paper_id"], paper)
            papers = list(self._all)
        return [
            p for p in papers if task in (None, p["task"]) and campaign in (None, p["campaign"])
        ]

    def _with_verified_claims(self, paper: dict[str, Any]) -> dict[str, Any]:
        key = f"{paper['run']}:{paper['version']}"
        with self._lock:
            known = self._checked.get(key)
        if known is not None:
            return known
        graded = graded_before(paper["run"], paper["version"], loader(self.store))
        claims = checked_claims(paper["claims"], graded)
        experiments = checked_experiments(paper.get("experiments") or [], graded)
        checked = {**paper, "claims": claims, "experiments": experiments}
        with self._lock:
            self._checked[key] = checked
        return checked

    def get(self, paper_id: str) -> dict[str, Any] | None:
        """A paper's submitted payload (plus `lab`, `run`, and `verified` per claim), or None."""
        self._papers()
        with self._lock:
            paper = self._by_id.get(paper_id)
        return None if paper is None else self._with_verified_claims(paper)

    def reviews(self, paper_id: str) -> PaperReviews | None:
        """The paper's reviews and decision, from its review stream; None until decided."""
        events = self.store.read_stream(review_stream(paper_id))
        decided = next((e.payload for e in events if isinstance(e.payload, PaperDecided)), None)
        stopped = next((e.payload for e in events if isinstance(e.payload, ReviewStopped)), None)
        if stopped is not None:
            return PaperReviews(None, (), (), None, stopped=stopped.reason)
        if decided is None:
            return None
        forms = [e for e in events if isinstance(e.payload, ReviewSubmitted)]
        return PaperReviews(
            decision=decided.decision,
            reviews=tuple(decided.reviews),
            weaknesses=tuple(
                w
                for e in forms
                for w in e.payload.form.weaknesses  # type: ignore[union-attr]
            ),
            mean_rating=decided.mean_rating,
        )

    def accepted(self, paper_id: str) -> bool:
        """Whether the paper's reviewers accepted it (as far as the log says by now)."""
        self._papers()
        with self._lock:
            return paper_id in self._accepted

    def search(self, scope: ArchiveScope, query: str, k: int) -> list[PaperHit]:
        """The `k` papers in `scope` that best match `query` (newest first among equals)."""
        papers = self._papers(scope.task, scope.campaign)
        if scope.accepted_only:
            with self._lock:
                papers = [p for p in papers if p["paper_id"] in self._accepted]
        scores = bm25.rank(query, [f"{p['title']} {p['abstract']} {p['body']}" for p in papers])
        order = sorted(range(len(papers)), key=lambda i: (-scores[i], -i))
        hits = []
        for i in order[:k]:
            paper = self._with_verified_claims(papers[i])
            hits.append(
                PaperHit(
                    paper_id=paper["paper_id"],
                    title=paper["title"],
                    abstract=paper["abstract"],
                    lab=paper["lab"],
                    method=paper["method"],
                    claims=paper["claims"],
                    experiments=paper["experiments"],
                )
            )
        return hits
