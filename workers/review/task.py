"""The review task: a paper's reviews and its decision, on the `reviews` queue.

Idempotency rule: a review task is addressed by the paper (its run stream and version).
The reviews and the decision are published in one batch to the stream
`review-<paper id>`, with ids derived from that stream and each version; a task that
finds the stream already written does nothing, and one delivered twice at once writes
the same ids, which the log keeps once.
"""

import logging
from datetime import datetime

from events import Event, EventStore
from events.ids import utcnow
from events.payloads import (
    CampaignStarted,
    IntegrityViolation,
    PaperDecided,
    PaperSubmitted,
    Payload,
    ReviewConfig,
    ReviewRequested,
    ReviewSubmitted,
)
from events.streams import campaign_stream, event_id_at, review_stream
from runstate.paper_checks import addresses_reviewer
from workers.bus.base import publish
from workers.context import WorkerContext
from workers.errors import WorkerError
from workers.review import grounded
from workers.review.evidence import gather
from workers.review.meta import decide

log = logging.getLogger(__name__)

REVIEW_TASK = "labrxiv.review_paper"


def review_paper(ctx: WorkerContext, run: str, version: int) -> None:
    """Review the paper that run `run` submitted at `version` and decide on it."""
    events = ctx.store.read_stream(run, limit=version + 1)
    if len(events) <= version or not isinstance(events[version].payload, PaperSubmitted):
        raise WorkerError(f"{run} v{version} is not a recorded paper.submitted")
    paper_event = events[version]
    paper = paper_event.payload
    assert isinstance(paper, PaperSubmitted)
    stream = review_stream(paper.paper_id)
    if ctx.store.last_record(stream) is not None:
        return  # reviewed already (a redelivery)
    config = review_config(ctx.store, paper_event.correlation_id)
    if config is None:
        return  # the paper's campaign reviews nothing
    at = utcnow()
    out: list[Event] = []
    # The paper is data for its reviewers: text that speaks to them is an integrity
    # finding, recorded first in the review stream whoever reviews.
    addresses = addresses_reviewer(paper.title, paper.abstract, paper.body)
    if config.reviewer == "llm":
        requested = ReviewRequested(
            paper_id=paper.paper_id, run=run, version=version, config=config
        )
        out.append(_event(stream, 0, requested, paper_event, at))
        if addresses is not None:
            out.append(_event(stream, 1, _violation(addresses), paper_event, at))
        publish(ctx.bus, out)  # the reviewer's steps follow, from the log
        return
    if addresses is not None:
        out.append(_event(stream, 0, _violation(addresses), paper_event, at))
    evidence = gather(ctx.store, events, version)
    forms = []
    for index in range(config.reviews):
        form, relied_on = grounded.review(evidence)
        forms.append(form)
        payload = ReviewSubmitted(
            paper_id=paper.paper_id,
            reviewer=f"grounded-{index}",
            kind="grounded",
            form=form,
            relied_on=relied_on,
        )
        out.append(_event(stream, len(out), payload, paper_event, at))
    decision, reason, rating = decide(forms, config)
    decided = PaperDecided(
        paper_id=paper.paper_id,
        decision=decision,
        reason=reason,
        reviews=[e.id for e in out if isinstance(e.payload, ReviewSubmitted)],
        mean_rating=rating,
        run=run,
    )
    out.append(_event(stream, len(out), decided, paper_event, at))
    publish(ctx.bus, out)
    log.debug("paper %s: %s (%s)", paper.paper_id, decision, reason)


def _violation(said: str) -> IntegrityViolation:
    return IntegrityViolation(
        kind="addresses_reviewer", detail=f"the paper speaks to its reviewer: {said[:200]!r}"
    )


def review_config(store: EventStore, campaign: str | None) -> ReviewConfig | None:
    """How campaign `campaign` reviews its papers (None: it does not)."""
    if campaign is None:
        return None
    return _campaign_review(store, campaign)


def _campaign_review(store: EventStore, campaign: str) -> ReviewConfig | None:
    first = store.read_stream(campaign_stream(campaign), limit=1)
    if not first or not isinstance(first[0].payload, CampaignStarted):
        return None
    return first[0].payload.review


def _event(stream: str, version: int, payload: Payload, paper: Event, at: datetime) -> Event:
    return Event(
        id=event_id_at(stream, version, paper.occurred_at),
        stream=stream,
        version=version,
        occurred_at=at,
        causation_id=paper.id,
        correlation_id=paper.correlation_id,
        actor=getattr(
            payload, "reviewer", "meta-reviewer" if isinstance(payload, PaperDecided) else "labrxiv"
        ),
        payload=payload,
    )
