"""A lab's side of review rounds: it waits for the reviews of its last paper,
reads them, and revises the paper while it has rounds left. Any policy may use it; the
`search` policy does.

The waiting is explicit in the run's stream: `review.awaited` (the run is then idle; the
paper's decision wakes it: `workers.review.reactions`), then `review.received` once the
decision is in the log. The step that records `review.received` does nothing else, so
the same step taken twice at once (the wake-up and the reaper) records it once.
"""

from dataclasses import dataclass
from typing import Literal

from events.payloads import PaperSubmitted, ReviewAwaited, ReviewReceived
from runstate import RunState
from workers.tools.env import Archive

WAIT: Literal["wait"] = "wait"
"""Nothing to do until the paper's decision is recorded."""


@dataclass(frozen=True)
class Revise:
    """Revise `paper`, answering `received`."""

    paper: PaperSubmitted
    received: ReviewReceived


def review_round(
    state: RunState, archive: Archive
) -> ReviewAwaited | ReviewReceived | Revise | Literal["wait"] | None:
    """What a lab that has written its papers does about reviews: record that it awaits
    them, wait, record what it read, revise; None when it is done (no rounds, none left,
    or its last paper was accepted with nothing to answer)."""
    rounds = state.started.review_rounds
    revised = sum(1 for paper in state.papers if paper.revises)
    if not rounds or not state.papers or revised >= rounds:
        return None
    latest = state.papers[-1]
    received = next((r for r in reversed(state.received) if r.paper_id == latest.paper_id), None)
    if received is not None:
        if received.decision == "accept" and not received.weaknesses:
            return None
        return Revise(latest, received)
    if state.awaiting != latest.paper_id:
        return ReviewAwaited(paper_id=latest.paper_id)
    reviews = archive.reviews(latest.paper_id)
    if reviews is None:
        return WAIT
    if reviews.decision is None or reviews.mean_rating is None:
        return None  # its review stopped (a budget): there is nothing to answer
    return ReviewReceived(
        paper_id=latest.paper_id,
        decision=reviews.decision,
        reviews=list(reviews.reviews),
        weaknesses=list(reviews.weaknesses),
        mean_rating=reviews.mean_rating,
    )


def reviews_note(revising: Revise) -> str:
    """What a lab is told of the reviews it answers: the paper, the decision, the
    weaknesses the reviewers named (the lab's own words on how to resubmit follow)."""
    received = revising.received
    weaknesses = "\n".join(f"- {w}" for w in received.weaknesses) or "- (none named)"
    return (
        f"Paper {revising.paper.paper_id} ('{revising.paper.title}'): {received.decision}, "
        f"mean rating {received.mean_rating:.1f} of 10. Weaknesses the reviewers named:\n"
        f"{weaknesses}"
    )
