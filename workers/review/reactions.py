"""Reactions of review: a submitted paper's review task; a decided paper wakes its run
when the run awaits it, and may end its campaign. Sent by the reactor from the log
(`workers.reactor`); all are idempotent (a review task is addressed by its paper, a
run's step by the version it follows, a campaign's end by an id derived from it)."""

from collections.abc import Sequence

from events import EventStore
from events.payloads import ReviewAwaited
from events.recorded import Recorded
from events.streams import stream_kind
from workers.bus.base import Bus
from workers.lab.interrupt import before_stop
from workers.lab.reactions import close_campaign_if_done
from workers.lab.step import LAB_STEP_TASK
from workers.review.steps import OVER, REVIEW_STEP_TASK
from workers.review.task import REVIEW_TASK, review_config


def schedule_reviews(store: EventStore, bus: Bus, recorded: Sequence[Recorded]) -> None:
    """Send the review task of every paper submitted in a campaign that reviews, and
    close the campaigns whose papers were decided (the last decision may end one)."""
    reviews: dict[str, bool] = {}
    decided_in: set[str] = set()
    last: dict[str, Recorded] = {}
    for event in recorded:
        if stream_kind(event.stream) == "review":
            last[event.stream] = event
        campaign = event.correlation_id
        if campaign is None:
            continue
        if event.type == "paper.submitted":
            if campaign not in reviews:
                reviews[campaign] = review_config(store, campaign) is not None
            if reviews[campaign]:
                bus.send(REVIEW_TASK, event.stream, event.version)
        elif event.type in ("paper.decided", "review.stopped"):
            decided_in.add(campaign)
            run = (
                event.payload.get("run") if event.type == "paper.decided" else _run_of(store, event)
            )
            _wake(store, bus, run, event.payload["paper_id"])
    # A reviewer that works in steps (llm) takes the next one after each of its events.
    for stream, event in last.items():
        if event.type not in OVER:
            bus.send(REVIEW_STEP_TASK, stream, event.version)
    for campaign in sorted(decided_in):
        close_campaign_if_done(store, bus, campaign)


def _run_of(store: EventStore, stopped: Recorded) -> str | None:
    """The run whose paper's review stopped (its review stream's `review.requested`)."""
    first = store.read_records(stream=stopped.stream, limit=1)
    return first[0].payload.get("run") if first else None


def _wake(store: EventStore, bus: Bus, run: str | None, paper_id: str) -> None:
    """Send the step of `run` if it is idle awaiting `paper_id`'s reviews (its last event
    is the `review.awaited`, or a stop, `run.interrupted`, right after it: a run resumed
    while it waits records nothing until the decision). That step only records
    `review.received`, so sending it while the step is being taken already (the reaper)
    is harmless."""
    if run is None:
        return
    last = store.last_record(run)
    if last is None:
        return
    awaited = last.typed().payload
    if last.type == "run.interrupted":
        before = before_stop(store, last)
        awaited = before.payload if before else awaited
    if isinstance(awaited, ReviewAwaited) and awaited.paper_id == paper_id:
        bus.send(LAB_STEP_TASK, run, last.version)
