"""The steps of a paper's review by the `llm` reviewer: the last event of the review
stream says what comes next, as a lab run's does (`workers/lab/policies/llm/step.py`),
through the same write-ahead call driver (`workers.llm.driver`):

- `review.requested`, `review.submitted`, `review.failed`: when every reviewer of the
  ensemble is done, the decision (`paper.decided`, the meta-reviewer's rule) or, with no
  valid review, `review.stopped`; else check the reviewer and campaign budgets (reached:
  `review.stopped` with the numbers) and write the next reviewer's call ahead;
- `model.called`: send it; on an answer, record the review (or `review.failed`, naming
  the field the answer got wrong); the next step goes on as above;
- `model.failed`: the next attempt once the gateway's wait is over, or `review.failed`
  when the gateway gave up;
- `paper.decided`, `review.stopped`: nothing (the review is over).

Idempotency rule: a step is addressed by (review stream, the version it follows); its
events' ids are derived from the stream and their versions, so a step taken twice leaves
one copy. Reviewer calls are model events of the review stream: the ledger counts them
(kind `review`), and the campaign's budgets count them with its labs' calls.
"""

import logging
from dataclasses import dataclass

from events import Event, EventStore
from events.ids import utcnow
from events.payloads import (
    ModelCalled,
    ModelFailed,
    ModelResponded,
    PaperDecided,
    PaperSubmitted,
    Payload,
    ReviewConfig,
    ReviewFailed,
    ReviewForm,
    ReviewRequested,
    ReviewStopped,
    ReviewSubmitted,
)
from events.streams import event_id_at
from runstate.budget import ModelBudget, model_budget_spent
from workers.bus.base import publish
from workers.context import WorkerContext
from workers.errors import WorkerError
from workers.lab.budget import campaign_budget
from workers.llm import driver
from workers.review import llm_reviewer
from workers.review.meta import decide

log = logging.getLogger(__name__)

REVIEW_STEP_TASK = "labrxiv.review_step"
Out = tuple[list[Payload], dict[str, bytes]]
OVER = ("paper.decided", "review.stopped")
"""The events that end a review stream."""


@dataclass(frozen=True)
class Review:
    """A review stream as far as it goes."""

    stream: str
    events: list[Event]
    requested: ReviewRequested

    @property
    def done(self) -> int:
        """Reviewers that gave a review or failed."""
        return sum(isinstance(e.payload, ReviewSubmitted | ReviewFailed) for e in self.events)

    def forms(self) -> list[tuple[Event, ReviewForm]]:
        return [(e, e.payload.form) for e in self.events if isinstance(e.payload, ReviewSubmitted)]

    def call(self, call_id: str) -> ModelCalled:
        for event in reversed(self.events):
            if isinstance(event.payload, ModelCalled) and event.payload.call_id == call_id:
                return event.payload
        raise KeyError(call_id)


def review_step(ctx: WorkerContext, stream: str, after_version: int, final: bool = True) -> None:
    """Take the step of review stream `stream` that follows `after_version`."""
    events = ctx.store.read_stream(stream)
    if not events or events[-1].version != after_version or events[-1].type in OVER:
        return  # taken already (a redelivery), not recorded yet, or the review is over
    first = events[0].payload
    if not isinstance(first, ReviewRequested):
        return  # a reviewer that writes its stream in one batch (grounded) takes no steps
    if ctx.labs is None or ctx.labs.gateways is None:
        raise WorkerError("this worker has no model gateway configured")
    review = Review(stream, events, first)
    payloads, blobs = _act(ctx, review, final)
    at = utcnow()
    out = [
        Event(
            id=event_id_at(stream, after_version + 1 + i, events[-1].occurred_at),
            stream=stream,
            version=after_version + 1 + i,
            occurred_at=at,
            causation_id=events[-1].id,
            correlation_id=events[0].correlation_id,
            actor=_actor(payload, review),
            payload=payload,
        )
        for i, payload in enumerate(payloads)
    ]
    publish(ctx.bus, out, blobs)


def _act(ctx: WorkerContext, review: Review, final: bool) -> Out:
    config = review.requested.config
    gateway = ctx.labs.priced_gateway(config.base_url, config.prices)
    last = review.events[-1].payload
    if isinstance(last, ModelCalled):
        sent, blobs = driver.send(
            gateway, ctx.store, ctx.labs.inflight, last, review.stream, ctx.prepared
        )
        outcome = sent[-1]
        if not isinstance(outcome, ModelResponded):
            return sent, blobs  # a failure (its retry is the next step), or the next attempt
        text = llm_reviewer.answer_text(
            blobs.get(outcome.response.sha256) if outcome.response else None, outcome.preview
        )
        # The review is recorded and the step ends: the next step, which its recording
        # triggers, decides (knowing every review's id) or writes the next call ahead.
        return [*sent, _reviewed(review, outcome, llm_reviewer.parse(text))], blobs
    if isinstance(last, ModelFailed):
        called = review.call(last.call_id)
        if last.will_retry:
            return driver.after_failure(gateway, called, last, review.events[-1].occurred_at, final)
        failed = ReviewFailed(
            paper_id=review.requested.paper_id,
            reviewer=_reviewer(review.done),
            reason=f"the model failed {called.attempt} times; last: {last.error} {last.detail}"[
                :2000
            ],
        )
        return [failed], {}
    return _next(ctx, review)


def _reviewed(review: Review, answered: ModelResponded, form: ReviewForm | str) -> Payload:
    paper_id = review.requested.paper_id
    reviewer = _reviewer(review.done)
    if isinstance(form, str):
        return ReviewFailed(paper_id=paper_id, reviewer=reviewer, reason=form[:2000])
    paper = next(e for e in review.events if isinstance(e.payload, ReviewRequested))
    return ReviewSubmitted(
        paper_id=paper_id,
        reviewer=reviewer,
        kind="llm",
        model=answered.model,
        price=answered.price,
        cost_usd=answered.cost_usd if answered.cost_known else None,
        form=form,
        relied_on=[paper.id],
    )


def _next(ctx: WorkerContext, review: Review) -> Out:
    """The decision once every reviewer is done (or a stop, with no valid review), else
    the next reviewer's call written ahead, budgets allowing."""
    config = review.requested.config
    paper_id = review.requested.paper_id
    if review.done >= config.reviews:
        forms = review.forms()
        if not forms:
            return [ReviewStopped(paper_id=paper_id, reason="no reviewer gave a valid review")], {}
        decision, reason, rating = decide([form for _, form in forms], config)
        decided = PaperDecided(
            paper_id=paper_id,
            decision=decision,
            reason=reason,
            reviews=[event.id for event, _ in forms],
            mean_rating=rating,
            run=review.requested.run,
        )
        return [decided], {}
    over = _over_budget(ctx, review)
    if over is not None:
        return [ReviewStopped(paper_id=paper_id, reason=over)], {}
    paper = _paper(ctx.store, review.requested)
    version = review.events[-1].version
    request = llm_reviewer.request(paper, config, review.stream, version, review.done)
    prepared = driver.write_ahead(ctx.labs.gateways(config.base_url), request, ctx.prepared)
    return [prepared.called], prepared.blobs


def _paper(store: EventStore, requested: ReviewRequested) -> PaperSubmitted:
    events = store.read_stream(requested.run, after_version=requested.version - 1, limit=1)
    if not events or not isinstance(events[0].payload, PaperSubmitted):
        raise WorkerError(f"{requested.run} v{requested.version} is not a paper.submitted")
    return events[0].payload


def _over_budget(ctx: WorkerContext, review: Review) -> str | None:
    """Why the next reviewer call may not be made: the reviewers' budget or the
    campaign's spent (what was spent, with the limit), else None. Both are counted by the
    worker's fold of the campaign's spend (`CampaignSpend`), as a lab's are."""
    config = review.requested.config
    campaign = review.events[0].correlation_id
    if campaign is None:
        return None
    reviewers = ctx.spend.used_by(campaign, "review")
    budgets = [ModelBudget("reviewer", config.tokens, config.dollars, reviewers)]
    found = campaign_budget(ctx.streams, ctx.spend, campaign, review.stream)
    if found is not None:
        limits = found.budget
        budgets.append(ModelBudget("campaign", limits.tokens, limits.dollars, found.used))
    spent = model_budget_spent(*budgets, unpriced=_unpriced(ctx, config))
    return None if spent is None else spent.said()


def _unpriced(ctx: WorkerContext, config: ReviewConfig) -> str | None:
    """The reviewers' model when neither the campaign's recorded prices nor the worker's
    table has a price for it."""
    if ctx.labs is None or ctx.labs.gateways is None or not config.model:
        return None
    gateway = ctx.labs.priced_gateway(config.base_url, config.prices)
    return config.model if gateway.prices.price_of(config.model) is None else None


def _reviewer(index: int) -> str:
    return f"llm-{index}"


def _actor(payload: Payload, review: Review) -> str:
    reviewer = getattr(payload, "reviewer", None)
    if isinstance(reviewer, str):
        return reviewer
    if isinstance(payload, ModelCalled | ModelResponded | ModelFailed):
        return _reviewer(review.done)
    return "meta-reviewer"
