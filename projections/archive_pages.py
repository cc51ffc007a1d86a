"""The archive listing a page at a time (`labrxiv serve`): papers in submission order,
narrowed by task, campaign, lab and decision, with the count of all that match, so a
page of an archive of any size reads only its own rows."""

from dataclasses import dataclass
from typing import Literal

from sqlalchemy import Connection, Select, func, select

from projections.archive import PAPERS, SUMMARY_COLUMNS, PaperSummary, summary_of
from projections.reviews import DECISIONS

Decided = Literal["accept", "reject", "undecided"]
"""A decision filter: accepted, rejected, or no decision (not reviewed, or not yet)."""
DECIDED: tuple[Decided, ...] = ("accept", "reject", "undecided")


@dataclass(frozen=True)
class PaperFilter:
    """Which papers a listing shows (None: any)."""

    task: str | None = None
    campaign: str | None = None
    lab: str | None = None
    decision: Decided | None = None


@dataclass(frozen=True)
class PapersPage:
    """One page of the listing and how many papers match in all."""

    papers: list[PaperSummary]
    total: int


def narrowed(query: Select, only: PaperFilter) -> Select:
    """`query` (of the papers table) keeping only the papers `only` keeps."""
    for column, value in (
        (PAPERS.c.task, only.task),
        (PAPERS.c.campaign, only.campaign),
        (PAPERS.c.lab, only.lab),
    ):
        if value is not None:
            query = query.where(column == value)
    if only.decision == "undecided":
        decided = select(DECISIONS.c.paper_id)
        query = query.where(PAPERS.c.paper_id.not_in(decided))
    elif only.decision is not None:
        chosen = select(DECISIONS.c.paper_id).where(DECISIONS.c.decision == only.decision)
        query = query.where(PAPERS.c.paper_id.in_(chosen))
    return query


def papers_page(conn: Connection, only: PaperFilter, offset: int, limit: int) -> PapersPage:
    """The papers that match `only`, in submission order, from `offset`, at most `limit`."""
    total = conn.execute(narrowed(select(func.count()).select_from(PAPERS), only)).scalar_one()
    query = narrowed(select(*SUMMARY_COLUMNS), only).order_by(PAPERS.c.position)
    rows = conn.execute(query.offset(offset).limit(limit))
    return PapersPage([summary_of(row._mapping) for row in rows], int(total))
