"""An `llm` reviewer run on papers from outside the archive (`labrxiv reviewers eval
--review-model`): each paper's review is asked for as an `llm` reviewer's is, and every
call is recorded as one, written ahead, in a stream of the evaluation's own
(`revieweval-<id>`): the ledger counts its calls and tokens, and `--reviewer-tokens` or
`--reviewer-dollars` stop it with `review.stopped` and the numbers.

The papers are taken one at a time, each call recorded before it is sent (the caller
waits until the log holds it: `recorded`), so a crash mid-call shows as a call of unknown
outcome, as for a lab.
"""

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from events import EventStore
from events.payloads import ReviewConfig, ReviewFailed, ReviewStopped, ReviewSubmitted
from events.spend import NOTHING, Spend, spend_of_payload
from runstate.budget import ModelBudget, model_budget_spent
from workers.llm import Gateway, in_place
from workers.llm.in_place import Record, StreamWriter
from workers.review import llm_reviewer

_UNSAFE = re.compile(r"[^A-Za-z0-9_.:-]")


@dataclass(frozen=True)
class Reviewed:
    """What the reviewer said of one paper (None: no valid review, with the reason)."""

    paper: str
    rating: int | None
    reason: str | None = None


@dataclass
class EvalRun:
    """One evaluation's stream, written step by step."""

    stream: str
    gateway: Gateway
    store: EventStore
    inflight: Path
    record: Record
    config: ReviewConfig
    spent: Spend = NOTHING

    def __post_init__(self) -> None:
        self.out = StreamWriter(self.stream, "llm-0", self.record)

    def review_all(self, papers: Sequence[tuple[str, str]]) -> tuple[list[Reviewed], str | None]:
        """Review each (id, text) in turn; stops at a budget (the reason is returned and
        recorded)."""
        out: list[Reviewed] = []
        for index, (paper_id, text) in enumerate(papers):
            over = self._over_budget()
            if over is not None:
                self.out.write([ReviewStopped(paper_id=safe_id(paper_id), reason=over)], {})
                return out, over
            out.append(self._review(index, paper_id, text))
        return out, None

    def _review(self, index: int, paper_id: str, text: str) -> Reviewed:
        request_id = f"{self.stream}:{self.out.version + 1}"
        request = llm_reviewer.text_request(text, [], self.config, request_id, index)
        answered = in_place.call(self.gateway, self.store, self.inflight, request, self.out)
        if isinstance(answered, str):
            self.out.write([_failed(paper_id, answered)], {})
            return Reviewed(paper_id, None, answered)
        outcome, blobs = answered
        self.spent = self.spent + (spend_of_payload(outcome) or NOTHING)
        sha = outcome.response.sha256 if outcome.response else None
        text_said = llm_reviewer.answer_text(blobs.get(sha) if sha else None, outcome.preview)
        form = llm_reviewer.parse(text_said)
        if isinstance(form, str):
            self.out.write([_failed(paper_id, form)], {})
            return Reviewed(paper_id, None, form)
        review = ReviewSubmitted(
            paper_id=safe_id(paper_id),
            reviewer="llm-0",
            kind="llm",
            model=outcome.model,
            price=outcome.price,
            cost_usd=outcome.cost_usd if outcome.cost_known else None,
            form=form,
        )
        self.out.write([review], {})
        return Reviewed(paper_id, form.rating)

    def _over_budget(self) -> str | None:
        tokens, dollars = self.config.tokens, self.config.dollars
        model = self.config.model
        unpriced = model if model and self.gateway.prices.price_of(model) is None else None
        spent = model_budget_spent(
            ModelBudget("reviewer", tokens, dollars, self.spent), unpriced=unpriced
        )
        return None if spent is None else spent.said()


def _failed(paper_id: str, reason: str) -> ReviewFailed:
    return ReviewFailed(paper_id=safe_id(paper_id), reviewer="llm-0", reason=reason)


def safe_id(paper_id: str) -> str:
    """A data set's paper id as a labrxiv paper id (letters, digits, `_.:-`; 80 at most)."""
    return _UNSAFE.sub("_", paper_id)[:80] or "_"
