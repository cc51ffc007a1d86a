"""Peer review events (CycleReviewer): reviews of archive papers and the decisions on them.

A paper's reviews and its decision are the stream `review-<paper id>`: one
`review.submitted` per reviewer, then one `paper.decided` by the meta-reviewer. The
form is the ICLR 2024 one that CycleReviewer and the AI Scientist use; a form with a
field missing or out of its range is refused at the door (the recorder dead-letters it
with the field that is wrong), never clamped into range.
"""

from typing import Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, model_validator

from events.payloads.base import Payload
from events.payloads.model import Price

ReviewerKind = Literal["grounded", "llm"]
"""`grounded`: scores from the log (no model); `llm`: a reviewer model."""

Decision = Literal["accept", "reject"]


class ReviewForm(BaseModel):
    """The ICLR 2024 review form. Every field is required; scores are whole numbers."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    summary: str = Field(min_length=1, max_length=5000)
    """What the paper claims and does, in the reviewer's words."""
    strengths: list[str] = Field(max_length=50)
    weaknesses: list[str] = Field(max_length=50)
    questions: list[str] = Field(max_length=50)
    """Questions to the authors."""
    soundness: int = Field(ge=1, le=4)
    """1 poor, 2 fair, 3 good, 4 excellent: are the claims supported?"""
    presentation: int = Field(ge=1, le=4)
    """1 poor … 4 excellent: is the paper clear and complete?"""
    contribution: int = Field(ge=1, le=4)
    """1 poor … 4 excellent: how much does it add to what was known?"""
    rating: int = Field(ge=1, le=10)
    """Overall, 1 (strong reject) to 10 (strong accept); 6 is marginally above the bar."""
    confidence: int = Field(ge=1, le=5)
    """1 (educated guess) to 5 (certain, checked the details)."""
    ethics_flag: bool
    """The paper needs an ethics review (e.g. it tries to manipulate its reviewer)."""


ACCEPT_RATING = 6.0
"""The mean rating (1-10) a paper needs to be accepted unless a campaign says otherwise."""


class ReviewConfig(BaseModel):
    """How a campaign's papers are reviewed (`labrxiv campaign --review`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    reviewer: ReviewerKind = "grounded"
    """Who reviews: `grounded` (from the log, offline) or `llm`."""
    reviews: int = Field(default=1, ge=1, le=10)
    """Reviews per paper (an ensemble; CycleReviewer writes four)."""
    accept_rating: float = Field(default=ACCEPT_RATING, ge=1, le=10)
    """The mean rating a paper needs to be accepted (`docs/review.md`, the decision)."""
    rounds: int = Field(default=0, ge=0, le=5)
    """Revisions a lab may make of its last paper, each answering its reviews
    (`--review-rounds`); 0: papers are reviewed and decided, never revised."""
    model: str | None = None
    """The reviewer model, for the `llm` reviewer."""
    base_url: str | None = None
    """Its OpenAI-compatible endpoint (None: the worker's default)."""
    temperature: float | None = None
    max_tokens: int | None = Field(default=None, ge=1)
    tokens: int | None = Field(default=None, ge=1)
    """The reviewers' token budget, over all the campaign's reviews (None: no limit)."""
    dollars: float | None = Field(default=None, gt=0)
    """The reviewers' dollar budget, over all the campaign's reviews (None: no limit)."""
    prices: dict[str, Price] = {}
    """The reviewer model's price in the price table of the command that started the
    campaign, as `LlmConfig.prices` records a lab's: every worker prices the reviews by it
    first, whatever its own table."""

    @model_validator(mode="after")
    def _llm_needs_a_model(self) -> "ReviewConfig":
        if self.reviewer == "llm" and not self.model:
            raise ValueError("the llm reviewer needs a model")
        return self


class ReviewSubmitted(Payload):
    """A reviewer reviewed a paper of the archive."""

    type: Literal["review.submitted"] = "review.submitted"
    paper_id: str = Field(pattern=r"^[A-Za-z0-9_.:-]{1,80}$")
    """The paper reviewed."""
    reviewer: str = Field(min_length=1, max_length=80)
    """Which reviewer of the paper's ensemble (e.g. `grounded-0`)."""
    kind: ReviewerKind
    model: str | None = None
    """The reviewer model, for an `llm` reviewer (its calls are model events of the
    review stream, priced there)."""
    price: Price | None = None
    """The price the review's model call was made at (frozen from its `model.responded`);
    None for a reviewer that calls no model, or a model with no price."""
    cost_usd: float | None = None
    """What the review's call cost at that price; None when unknown (never a silent 0)."""
    form: ReviewForm
    relied_on: list[UUID] = []
    """The ids of the events the review rests on (the paper, the gradings it checked)."""


class PaperDecided(Payload):
    """The meta-reviewer's decision on a paper, from its reviews."""

    type: Literal["paper.decided"] = "paper.decided"
    paper_id: str = Field(pattern=r"^[A-Za-z0-9_.:-]{1,80}$")
    decision: Decision
    reason: str = Field(min_length=1, max_length=2000)
    """Why, with the numbers (mean rating and soundness, flags)."""
    reviews: list[UUID] = Field(min_length=1)
    """The ids of the `review.submitted` events decided on."""
    mean_rating: float = Field(ge=1, le=10)
    run: str | None = None
    """The run that submitted the paper (woken by the decision when it awaits it)."""


class ReviewRequested(Payload):
    """A paper's review began: the first event of its review stream, for reviewers that
    work in steps (the `llm` reviewer: each model call is written ahead)."""

    type: Literal["review.requested"] = "review.requested"
    paper_id: str = Field(pattern=r"^[A-Za-z0-9_.:-]{1,80}$")
    run: str
    """The run that submitted the paper."""
    version: int = Field(ge=0)
    """The version of its `paper.submitted` in that run."""
    config: ReviewConfig


class ReviewFailed(Payload):
    """A reviewer of the ensemble gave no review: its model failed for good, or its answer
    was no valid form (the reason says which field)."""

    type: Literal["review.failed"] = "review.failed"
    paper_id: str = Field(pattern=r"^[A-Za-z0-9_.:-]{1,80}$")
    reviewer: str = Field(min_length=1, max_length=80)
    reason: str = Field(min_length=1, max_length=2000)


class ReviewStopped(Payload):
    """A paper's review stopped before a decision: a budget was reached, or no reviewer
    gave a valid review. Nothing already recorded is lost; the paper stays undecided."""

    type: Literal["review.stopped"] = "review.stopped"
    paper_id: str = Field(pattern=r"^[A-Za-z0-9_.:-]{1,80}$")
    reason: str = Field(min_length=1, max_length=2000)


class ReviewAwaited(Payload):
    """A lab waits for the reviews of its paper before it goes on (it may revise it)."""

    type: Literal["review.awaited"] = "review.awaited"
    paper_id: str = Field(pattern=r"^[A-Za-z0-9_.:-]{1,80}$")


class ReviewReceived(Payload):
    """A lab read the reviews of its paper and the decision on it."""

    type: Literal["review.received"] = "review.received"
    paper_id: str = Field(pattern=r"^[A-Za-z0-9_.:-]{1,80}$")
    decision: Decision
    reviews: list[UUID] = Field(min_length=1)
    """The `review.submitted` events read (what a revision answers)."""
    weaknesses: list[str] = []
    """The reviews' weaknesses, as the lab was shown them."""
    mean_rating: float = Field(ge=1, le=10)
