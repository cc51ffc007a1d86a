"""Campaigns as pages and as `/api/v1/campaigns`: every campaign, and one with its runs'
status, best score and spend, live (the page polls the API) and its curves drawn."""

from dataclasses import asdict, dataclass
from typing import Any

from fastapi import APIRouter, Request, Response
from sqlalchemy import Connection

from events import EventStore
from labrxiv.errors import NotFound
from labrxiv.lookup import resolve_campaign
from labrxiv.read_shapes import JSON, runs_json
from labrxiv.web.curves import AXES, curve_svg
from labrxiv.web.reading import Conn, Page, Paging, Store, json_response
from labrxiv.web.templates import render
from projections.campaigns import CampaignInfo, campaign_modes, campaigns_of
from projections.curves import curve_points
from projections.ledger import LedgerTotals, ledger_totals
from projections.runs import RunView, count_runs, runs_of

pages = APIRouter(include_in_schema=False)
api = APIRouter(prefix="/api/v1", tags=["campaigns"])


@dataclass(frozen=True)
class CampaignPage:
    """A campaign with its runs and what each spent."""

    info: CampaignInfo
    runs: list[RunView]
    """A page of its runs."""
    total: int
    """How many runs it has."""
    modes: dict[str, str | None]
    spend: dict[str, LedgerTotals]
    """The ledger rolled up per run shown, by run stream (a run with no call yet: none)."""

    def json(self) -> JSON:
        """The campaign, its runs as `labrxiv runs --json` shows them, their spend."""
        return {
            "campaign": asdict(self.info),
            "runs": runs_json(self.runs, self.modes),
            "spend": {run: asdict(totals) for run, totals in self.spend.items()},
        }


def _campaign(store: EventStore, conn: Connection, text: str, paging: Paging) -> CampaignPage:
    campaign = resolve_campaign(store, conn, text)
    found = campaigns_of(conn, campaign)
    if not found:
        raise NotFound(f"campaign {campaign} is not in the read models yet")
    total = count_runs(conn, campaign)
    paging.check(total)
    runs = runs_of(conn, campaign=campaign, offset=paging.offset, limit=paging.per_page)
    streams = [r.stream for r in runs]
    totals = ledger_totals(conn, by="run", runs=streams)  # by the runs key, not a scan
    spend = {t.key: t for t in totals if t.key}
    return CampaignPage(found[0], runs, total, campaign_modes(conn), spend)


@pages.get("/campaigns")
def campaigns_page(request: Request, conn: Conn) -> Response:
    """Every campaign, the first started first."""
    return render(request, "campaigns.html", {"campaigns": campaigns_of(conn)})


@pages.get("/campaigns/{campaign}")
def campaign_page(
    request: Request, store: Store, conn: Conn, paging: Page, campaign: str
) -> Response:
    """A campaign: a page of its runs (kept current by the page's script) and their
    curves."""
    shown = _campaign(store, conn, campaign, paging)
    context: dict[str, Any] = {
        "page": shown,
        "c": shown.info,
        "axes": list(AXES),
        "paging": paging,
        "pages": paging.pages(shown.total),
        "asked": {},
    }
    return render(request, "campaign.html", context)


@pages.get("/campaigns/{campaign}/curves/{axis}.svg")
def curve_image(store: Store, conn: Conn, paging: Page, campaign: str, axis: str) -> Response:
    """The best score so far of a page of the campaign's runs against `axis`, as SVG."""
    if axis not in AXES:
        raise NotFound(f"no curve against {axis} (one of {', '.join(AXES)})")
    name = resolve_campaign(store, conn, campaign)
    assert name is not None
    paging.check(count_runs(conn, name))
    shown = runs_of(conn, campaign=name, offset=paging.offset, limit=paging.per_page)
    svg = curve_svg(curve_points(conn, campaign=name, runs=[r.stream for r in shown]), axis)
    headers = {"Cache-Control": "no-store"}
    return Response(svg, media_type="image/svg+xml", headers=headers)


@api.get("/campaigns", summary="Every campaign (as `labrxiv campaigns --json`)")
def campaigns_api(conn: Conn) -> Response:
    """Id, task, mode, policy, labs, runs, status, best score, start."""
    return json_response(campaigns_of(conn))


@api.get("/campaigns/{campaign}", summary="One campaign with its runs and their spend")
def campaign_api(store: Store, conn: Conn, paging: Page, campaign: str) -> Response:
    """The campaign (its id or a prefix), a page of its runs' rows, and the ledger of
    each; `X-Total-Count`: how many runs it has."""
    shown = _campaign(store, conn, campaign, paging)
    return json_response(shown.json(), shown.total)
