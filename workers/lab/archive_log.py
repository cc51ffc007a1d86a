"""The archive as labs read it, straight from the log: always current, no projection lag.

Labs in `archive` mode must see each other's papers as soon as they are recorded;
reading `paper.submitted` events from the log gives exactly that. A lab reads the
papers of its own campaign (by the events' correlation id), so a campaign's budget is
all it learns from: an archive campaign run after an isolated one on the same data
does not start from the isolated labs' papers. Ranking is BM25
over title, abstract and body; newer papers first among equals.

Every claim and every reported experiment a paper shows carries `verified`, and
`measured`: what the grader measured (a claim's value, an experiment's scores), the same
as a fraction whether the paper wrote a fraction or a percentage; None unless verified.
Verified means that the author's run, before the paper, has that graded attempt
(`experiment.scored`, written by the environment) and that it measured the number
claimed (`runstate.claims`: the measurement as shown, rounded, or as a percentage), and
for an experiment also that it ran the configuration reported (as the run's
`config.json` writes say). A reader may trust a verified number without measuring it
again.
"""

import math
import re
import threading
from collections import Counter
from typing import Any

from events import EventStore
from events.payloads import PaperDecided, ReviewStopped, ReviewSubmitted
from events.streams import review_stream
from runstate import Attempt, fold_standing, loader
from runstate.claims import states
from workers.tools.env import PaperHit, PaperReviews

_WORD = re.compile(r"[a-z0-9_]+")


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
        graded = _graded_before(self.store, paper["run"], paper["version"])
        claims = []
        for claim in paper["claims"]:
            measured = _measured(claim, graded)
            claims.append({**claim, "verified": measured is not None, "measured": measured})
        experiments = []
        for experiment in paper.get("experiments") or []:
            attempt = graded.get(experiment.get("attempt") or 0)
            verified = _reproduces(experiment, attempt)
            scores = dict(attempt.scores or {}) if verified and attempt is not None else None
            experiments.append({**experiment, "verified": verified, "measured": scores})
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

    def search(
        self,
        task: str,
        query: str,
        k: int,
        campaign: str | None = None,
        accepted_only: bool = False,
    ) -> list[PaperHit]:
        """The `k` papers on `task` that best match `query` (newest first among equals);
        with `campaign`, only the papers its labs wrote (what an archive-mode lab reads);
        with `accepted_only`, only those its reviewers accepted by now."""
        papers = self._papers(task, campaign)
        if accepted_only:
            with self._lock:
                papers = [p for p in papers if p["paper_id"] in self._accepted]
        docs = [_tokens(f"{p['title']} {p['abstract']} {p['body']}") for p in papers]
        scores = _bm25(_tokens(query), docs)
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


def _graded_before(store: EventStore, run: str, version: int) -> dict[int, Attempt]:
    """The author's graded attempts recorded before its paper, by number (config and
    scores as the run's events say: written by the lab's tools and by the grader)."""
    events = store.read_stream(run, limit=version)  # versions 0..version-1
    try:  # a fork's attempts go on from its parent's: it is judged on both
        attempts = fold_standing(events, loader(store)).attempts if events else []
    except ValueError:  # not a run stream
        return {}
    return {a.number: a for a in attempts if a.scores is not None}


def _measured(claim: dict[str, Any], graded: dict[int, Attempt]) -> float | None:
    """What the graded attempt the claim names measured, when the claim states it."""
    attempt = graded.get(claim.get("attempt") or 0)
    if attempt is None or attempt.scores is None:
        return None
    measured = attempt.scores.get(claim["subtask"])
    return measured if states(claim.get("value"), measured) else None


def _reproduces(experiment: dict[str, Any], attempt: Attempt | None) -> bool:
    """Whether the attempt ran the reported configuration and got every reported score."""
    if attempt is None or experiment.get("config") != attempt.config:
        return False
    scores = experiment.get("scores") or {}
    return bool(scores) and all(states(v, attempt.scores.get(k)) for k, v in scores.items())  # type: ignore[union-attr]
