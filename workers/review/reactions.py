"""Reactions of review: a submitted paper's review task; a decided paper may end its
campaign. Sent by the reactor from the log (`workers.reactor`); both are idempotent (a
review task is addressed by its paper, a campaign's end by an id derived from it)."""

from collections.abc import Sequence

from events import EventStore
from events.recorded import Recorded
from workers.bus.base import Bus
from workers.lab.reactions import close_campaign_if_done
from workers.review.task import REVIEW_TASK, review_config


def schedule_reviews(store: EventStore, bus: Bus, recorded: Sequence[Recorded]) -> None:
    """Send the review task of every paper submitted in a campaign that reviews, and
    close the campaigns whose papers were decided (the last decision may end one)."""
    reviews: dict[str, bool] = {}
    decided_in: set[str] = set()
    for event in recorded:
        campaign = event.correlation_id
        if campaign is None:
            continue
        if event.type == "paper.submitted":
            if campaign not in reviews:
                reviews[campaign] = review_config(store, campaign) is not None
            if reviews[campaign]:
                bus.send(REVIEW_TASK, event.stream, event.version)
        elif event.type == "paper.decided":
            decided_in.add(campaign)
    for campaign in sorted(decided_in):
        close_campaign_if_done(store, bus, campaign)
