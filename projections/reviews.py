"""The reviews read model: every review of an archive paper (the ICLR form, one row per
`review.submitted`) and each paper's decision (`paper.decided`).

Rows are only ever inserted: a review and a decision are events of the stream
`review-<paper id>`, whose (stream, version) the log keeps once, and the runner applies
each page once; so the fold needs no update path and a rebuild equals the incremental
read model row for row.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, Column, Connection, DateTime, Text, select
from sqlmodel import Field, SQLModel
from sqlmodel.main import SQLModelConfig

from events.envelope import as_utc
from events.recorded import Recorded
from events.tables import JsonType, table_of
from projections.bulk import insert_rows
from projections.projector import Projector


class ReviewFields(SQLModel):
    """A review of a paper as people read it (the ICLR form): the columns of the reviews
    table (`ReviewRow`) that a read returns (`Review`)."""

    paper_id: str = Field(primary_key=True, max_length=80)
    number: int = Field(primary_key=True)
    """Its version in the paper's review stream (0 for the first review)."""
    reviewer: str = Field(max_length=80)
    kind: str = Field(max_length=20)
    """`grounded` or `llm`."""
    model: str | None = Field(default=None, max_length=200)
    soundness: int
    presentation: int
    contribution: int
    rating: int
    confidence: int
    ethics_flag: bool
    summary: str = Field(sa_column=Column(Text, nullable=False))
    strengths: list[str] = Field(sa_column=Column(JsonType, nullable=False))
    weaknesses: list[str] = Field(sa_column=Column(JsonType, nullable=False))
    questions: list[str] = Field(sa_column=Column(JsonType, nullable=False))
    relied_on: list[str] = Field(sa_column=Column(JsonType, nullable=False))
    """The ids of the events the review rests on."""
    at: datetime = Field(sa_column=Column(DateTime(timezone=True), nullable=False))


class ReviewRow(ReviewFields, table=True):
    """One review of a paper, with where it stands in the log."""

    __tablename__ = "reviews"

    campaign: str | None = Field(default=None, max_length=200, index=True)
    event_id: str = Field(max_length=36)
    """The `review.submitted` event."""
    position: int = Field(sa_column=Column(BigInteger, nullable=False))


class DecisionRow(SQLModel, table=True):
    """The meta-reviewer's decision on a paper."""

    __tablename__ = "paper_decisions"

    paper_id: str = Field(primary_key=True, max_length=80)
    decision: str = Field(max_length=10)
    """`accept` or `reject`."""
    reason: str = Field(sa_column=Column(Text, nullable=False))
    mean_rating: float
    reviews: int
    """How many reviews it was decided on."""
    campaign: str | None = Field(default=None, max_length=200, index=True)
    at: datetime = Field(sa_column=Column(DateTime(timezone=True), nullable=False))
    position: int = Field(sa_column=Column(BigInteger, nullable=False))


REVIEWS = table_of(ReviewRow)
DECISIONS = table_of(DecisionRow)


class ReviewsProjector(Projector):
    """Folds `review.submitted` and `paper.decided` into the reviews tables."""

    name = "reviews"
    cost = 0.1
    tables = (REVIEWS, DECISIONS)

    def apply(self, conn: Connection, events: Sequence[Recorded]) -> None:
        """Insert the page's reviews and decisions."""
        reviews, decisions = [], []
        for event in events:
            if event.type == "review.submitted":
                reviews.append(_review_row(event))
            elif event.type == "paper.decided":
                p = event.payload
                decisions.append(
                    {
                        "paper_id": p["paper_id"],
                        "decision": p["decision"],
                        "reason": p["reason"],
                        "mean_rating": p["mean_rating"],
                        "reviews": len(p["reviews"]),
                        "campaign": event.correlation_id,
                        "at": event.occurred_at,
                        "position": event.position,
                    }
                )
        insert_rows(conn, REVIEWS, reviews)
        insert_rows(conn, DECISIONS, decisions)


def _review_row(event: Recorded) -> dict[str, Any]:
    p = event.payload
    form = p["form"]
    return {
        "paper_id": p["paper_id"],
        "number": event.version,
        "reviewer": p["reviewer"],
        "kind": p["kind"],
        "model": p.get("model"),
        "campaign": event.correlation_id,
        **{k: form[k] for k in SCORES},
        "ethics_flag": form["ethics_flag"],
        "summary": form["summary"],
        "strengths": form["strengths"],
        "weaknesses": form["weaknesses"],
        "questions": form["questions"],
        "relied_on": [str(i) for i in p.get("relied_on", [])],
        "event_id": str(event.id),
        "at": event.occurred_at,
        "position": event.position,
    }


SCORES = ("soundness", "presentation", "contribution", "rating", "confidence")
"""The form's scores, as columns."""


# -- reading -----------------------------------------------------------------------


class Review(ReviewFields):
    """A review as `papers show` prints it."""

    model_config = SQLModelConfig(frozen=True)


@dataclass(frozen=True)
class PaperDecision:
    """A paper's decision, with its reviews."""

    paper_id: str
    decision: str
    reason: str
    mean_rating: float
    reviews: int
    at: datetime


def reviews_of(conn: Connection, paper_id: str) -> list[Review]:
    """A paper's reviews, in the order they were written."""
    query = select(REVIEWS).where(REVIEWS.c.paper_id == paper_id).order_by(REVIEWS.c.number)
    out = []
    for row in conn.execute(query).mappings():
        values = {k: row[k] for k in Review.model_fields if k != "at"}
        out.append(Review(**values, at=as_utc(row["at"])))
    return out


def decisions_of(conn: Connection, paper_ids: Sequence[str]) -> dict[str, PaperDecision]:
    """The decisions on those of `paper_ids` that have one."""
    if not paper_ids:
        return {}
    query = select(DECISIONS).where(DECISIONS.c.paper_id.in_(list(paper_ids)))
    return {
        row["paper_id"]: PaperDecision(
            paper_id=row["paper_id"],
            decision=row["decision"],
            reason=row["reason"],
            mean_rating=row["mean_rating"],
            reviews=row["reviews"],
            at=as_utc(row["at"]),
        )
        for row in conn.execute(query).mappings()
    }


def any_reviews(conn: Connection) -> bool:
    """Whether any paper has a review yet."""
    return conn.execute(select(REVIEWS.c.paper_id).limit(1)).first() is not None
