"""Campaign events: a set of labs run together on one task."""

from typing import Literal

from pydantic import Field

from events.payloads.base import Payload
from events.payloads.review import ReviewConfig
from events.payloads.run import Budget


class CampaignStarted(Payload):
    """A campaign began; its labs' runs carry its id as correlation id."""

    type: Literal["campaign.started"] = "campaign.started"
    task: str
    """The task bundle id the labs work on."""
    labs: int = Field(ge=1)
    """How many labs run in the campaign."""
    mode: Literal["isolated", "archive"]
    """`archive`: labs read each other's papers; `isolated`: they read none."""
    seed: int = 0
    """The seed the campaign's labs derive theirs from."""
    budget: Budget = Budget()
    """Limits on the whole campaign (tokens, dollars…), summed over its labs."""
    deterministic: bool = False
    """The labs took turns in a fixed order (one step at a time, `--deterministic`), so
    the same seed gives the same numbers; False: their steps ran in parallel and, in
    archive mode, which lab read which paper when depended on timing."""
    review: ReviewConfig | None = None
    """How the campaign's papers are reviewed; None: they are not (`docs/review.md`)."""


class CampaignFinished(Payload):
    """A campaign ended: every lab's run finished, or it was stopped."""

    type: Literal["campaign.finished"] = "campaign.finished"
    reason: Literal["done", "budget", "error", "cancelled"]
    """Why it ended."""


class CampaignInterrupted(Payload):
    """The process doing a campaign's work in embedded mode was stopped (Ctrl-C) before
    these runs finished: nobody works on them until `labrxiv resume` sends their next
    steps. A run's next event shows it running again."""

    type: Literal["campaign.interrupted"] = "campaign.interrupted"
    runs: list[str] = Field(min_length=1)
    """The run streams that had not finished."""
    detail: str = Field(default="", max_length=2000)
    """What stopped it (e.g. `Ctrl-C in labrxiv demo`)."""
