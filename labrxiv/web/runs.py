"""Runs as pages and as `/api/v1/runs`: every run (a campaign's, if asked), one run with
its attempts, papers and spend, and its trajectory viewer: `labrxiv analyze`'s HTML page
(`labrxiv.html_report`) served as a page of the app, findings linked to their steps."""

from dataclasses import asdict, dataclass

from fastapi import APIRouter, Query, Request, Response
from sqlalchemy import Connection

from events import EventStore
from labrxiv.analysis_of import analysis_of, stream_events
from labrxiv.errors import NotFound
from labrxiv.html_report import page as analysis_page
from labrxiv.lookup import resolve_campaign, resolve_run
from labrxiv.read_shapes import run_show_json, runs_json
from labrxiv.run_detail import RunDetail, run_detail
from labrxiv.web.reading import BadQuery, Conn, Page, Paging, Store, json_response
from labrxiv.web.templates import render
from projections.campaigns import campaign_modes
from projections.ledger import LedgerTotals, ledger_totals
from projections.runs import RunView, count_runs, runs_of

pages = APIRouter(include_in_schema=False)
api = APIRouter(prefix="/api/v1", tags=["runs"])

CAMPAIGN = Query(None, description="Only this campaign's runs (its id or a prefix).")
FRAMED = {"Content-Security-Policy": "frame-ancestors 'self'"}
"""The trajectory page brings its own policy (its script allowed by hash); the app's
header adds only who may frame it."""


def _runs(
    store: EventStore, conn: Connection, campaign: str | None, paging: Paging
) -> tuple[list[RunView], int]:
    """A page of the runs (of the campaign, if asked) and how many there are in all."""
    try:
        name = resolve_campaign(store, conn, campaign or None)
    except NotFound as exc:
        raise BadQuery(f"campaign filter: {exc}") from None
    total = count_runs(conn, name)
    paging.check(total)
    return runs_of(conn, campaign=name, offset=paging.offset, limit=paging.per_page), total


@dataclass(frozen=True)
class RunPage:
    """A run with its campaign's mode, its detail and its spend."""

    run: RunView
    mode: str | None
    detail: RunDetail
    spend: LedgerTotals | None


def _run(store: EventStore, conn: Connection, text: str) -> RunPage:
    stream = resolve_run(conn, text)
    (view,) = runs_of(conn, streams=[stream])
    mode = campaign_modes(conn).get(view.campaign or "")
    spent = ledger_totals(conn, by="run", runs=[stream])
    return RunPage(view, mode, run_detail(store, conn, view), spent[0] if spent else None)


@pages.get("/runs")
def runs_page(
    request: Request, store: Store, conn: Conn, paging: Page, campaign: str | None = None
) -> Response:
    """Every run (a campaign's, if asked), a page at a time."""
    shown, total = _runs(store, conn, campaign, paging)
    context = {
        "runs": shown,
        "total": total,
        "modes": campaign_modes(conn),
        "campaign": campaign or "",
        "paging": paging,
        "pages": paging.pages(total),
    }
    return render(request, "runs.html", context)


@pages.get("/runs/{run}")
def run_page(request: Request, store: Store, conn: Conn, run: str) -> Response:
    """A run: how it ended, attempts, papers, spend, events, and its trajectory viewer."""
    return render(request, "run.html", {"page": _run(store, conn, run)})


@pages.get("/runs/{run}/trajectory")
def trajectory_page(store: Store, conn: Conn, run: str) -> Response:
    """`labrxiv analyze RUN --html`'s page: behaviour, findings with their evidence linked
    to the steps, the verdict, the trajectory."""
    stream = resolve_run(conn, run)
    result = analysis_of(store, conn, "run", stream)
    shown = analysis_page(result, lambda s, v: stream_events(store, s, v))
    return Response(shown, media_type="text/html; charset=utf-8", headers=FRAMED)


@api.get("/runs", summary="Every run (as `labrxiv runs --json`)")
def runs_api(store: Store, conn: Conn, paging: Page, campaign: str | None = CAMPAIGN) -> Response:
    """A page of runs in stream order; `X-Total-Count`: how many in all."""
    shown, total = _runs(store, conn, campaign, paging)
    return json_response(runs_json(shown, campaign_modes(conn)), total)


@api.get("/runs/{run}", summary="One run (as `labrxiv runs show --json`)")
def run_api(store: Store, conn: Conn, run: str) -> Response:
    """The run's row, its events by type, attempts and papers."""
    shown = _run(store, conn, run)
    return json_response(run_show_json(shown.run, shown.mode, shown.detail))


@api.get("/runs/{run}/analysis", summary="A run's analysis (as `labrxiv analyze --json`)")
def analysis_api(store: Store, conn: Conn, run: str) -> Response:
    """Behaviour, findings and verdict of the run."""
    return json_response(asdict(analysis_of(store, conn, "run", resolve_run(conn, run))))
