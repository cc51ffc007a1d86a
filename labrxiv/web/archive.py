"""The archive (AgentRxiv) as pages and as `/api/v1/papers`, `/api/v1/search`: papers
by task, campaign, lab and decision, full-text search (`projections.archive_search`,
the BM25 `labrxiv papers search` and the labs' tool rank with), and a paper in full."""

from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request, Response
from sqlalchemy import Connection

from labrxiv.errors import NotFound
from labrxiv.lookup import resolve_campaign, resolve_paper
from labrxiv.read_shapes import Marks, marks_of, paper_json, papers_json
from labrxiv.web.reading import BadQuery, Conn, Page, Paging, Store, json_response
from labrxiv.web.templates import render
from projections.archive import ClaimMark, PaperDetail, claim_marks, get_paper
from projections.archive_pages import DECIDED, Decided, PaperFilter, papers_page
from projections.archive_search import search_page
from projections.reviews import PaperDecision, Review, decisions_of, reviews_of

pages = APIRouter(include_in_schema=False)
api = APIRouter(prefix="/api/v1", tags=["archive"])

TASK = Query(None, description="Only papers on this task.")
CAMPAIGN = Query(None, description="Only this campaign's papers (its id or a prefix).")
LAB = Query(None, description="Only this lab's papers.")
DECISION = Query(None, description="Only papers accepted, rejected, or undecided.")


def paper_filter(
    store: Store,
    conn: Conn,
    task: str | None = TASK,
    campaign: str | None = CAMPAIGN,
    lab: str | None = LAB,
    decision: str | None = DECISION,
) -> PaperFilter:
    """The filter the query asks for (a filter left empty keeps every paper); `BadQuery`
    for a decision or campaign that is none."""
    decision = decision or None
    if decision is not None and decision not in DECIDED:
        raise BadQuery(f"decision {decision!r}: one of {', '.join(DECIDED)}")
    try:
        campaign = resolve_campaign(store, conn, campaign or None)
    except NotFound as exc:
        raise BadQuery(f"campaign filter: {exc}") from None
    decided: Decided | None = decision
    return PaperFilter(task or None, campaign, lab or None, decided)


Only = Annotated[PaperFilter, Depends(paper_filter)]


@dataclass(frozen=True)
class Listing:
    """A page of the archive, or of a search's hits."""

    papers: list[Any]
    """`PaperSummary`s, or `SearchHit`s for a search."""
    total: int
    marks: Marks


def _listing(conn: Connection, only: PaperFilter, paging: Paging) -> Listing:
    found = papers_page(conn, only, paging.offset, paging.per_page)
    paging.check(found.total)
    return Listing(found.papers, found.total, marks_of(conn, [p.paper_id for p in found.papers]))


def _search(conn: Connection, query: str, only: PaperFilter, paging: Paging) -> Listing:
    """A page of the hits of `query`, best first, among the papers `only` keeps (BM25's
    corpus is the task's or the archive's: the other filters choose among the hits, as
    `papers search` does)."""
    if not query.strip():
        raise BadQuery("q: give words to search for")
    found = search_page(conn, query, only, paging.offset, paging.per_page)
    paging.check(found.total)
    shown = found.hits
    return Listing(shown, found.total, marks_of(conn, [h.paper.paper_id for h in shown]))


@pages.get("/")
@pages.get("/papers")
def archive_page(
    request: Request, conn: Conn, only: Only, paging: Page, q: str | None = None
) -> Response:
    """The archive: a page of papers, or of a search's hits, with the filters."""
    searching = q is not None and q != ""
    listing = _search(conn, q or "", only, paging) if searching else _listing(conn, only, paging)
    asked = {
        k: request.query_params.get(k, "") for k in ("q", "task", "campaign", "lab", "decision")
    }
    context = {
        "listing": listing,
        "searching": searching,
        "asked": asked,
        "decisions": DECIDED,
        "paging": paging,
        "pages": paging.pages(listing.total),
    }
    return render(request, "papers.html", context)


@dataclass(frozen=True)
class PaperPage:
    """A paper with what the log says of it."""

    detail: PaperDetail
    marks: list[ClaimMark]
    reviews: list[Review]
    decided: PaperDecision | None


def _paper(conn: Connection, text: str) -> PaperPage:
    paper_id = resolve_paper(conn, text)
    detail = get_paper(conn, paper_id)
    if detail is None:
        raise NotFound(f"no paper {text}")
    marks = claim_marks(conn, [paper_id])[paper_id]
    decided = decisions_of(conn, [paper_id]).get(paper_id)
    return PaperPage(detail, marks, reviews_of(conn, paper_id), decided)


@pages.get("/papers/{paper_id}")
def paper_page(request: Request, conn: Conn, paper_id: str) -> Response:
    """A paper in full: claims marked, reviews and decision, versions, lineage, body."""
    shown = _paper(conn, paper_id)
    citing_runs: dict[str, list[str]] = {}
    for other in shown.detail.cited_by:
        citing_runs.setdefault(other.run, []).append(other.paper_id)
    context = {"page": shown, "p": shown.detail.paper, "citing_runs": citing_runs}
    return render(request, "paper.html", context)


@api.get("/papers", summary="The archive's papers (as `labrxiv papers list --json`)")
def papers_api(conn: Conn, only: Only, paging: Page) -> Response:
    """A page of papers in submission order; `X-Total-Count`: how many match in all."""
    listing = _listing(conn, only, paging)
    return json_response(papers_json(listing.papers, listing.marks), listing.total)


@api.get("/papers/{paper_id}", summary="One paper (as `labrxiv papers show --json`)")
def paper_api(conn: Conn, paper_id: str) -> Response:
    """The paper in full (its id or a prefix), its claims' marks, reviews and decision."""
    shown = _paper(conn, paper_id)
    verified = [m.verified for m in shown.marks]
    return json_response(paper_json(shown.detail, verified, shown.reviews, shown.decided))


@api.get("/search", summary="Full-text search (as `labrxiv papers search --json`)")
def search_api(
    conn: Conn,
    only: Only,
    paging: Page,
    q: str = Query(..., description="The words to look for."),
) -> Response:
    """BM25 hits over title, abstract and body, best first."""
    listing = _search(conn, q, only, paging)
    return json_response(listing.papers, listing.total)
