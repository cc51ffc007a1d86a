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
from labrxiv.web.reading import Conn, Store, json_response
from labrxiv.web.templates import render
from projections.campaigns import CampaignInfo, campaign_modes, campaigns_of
from projections.curves import curve_points
from projections.ledger import LedgerTotals, ledger_totals
from projections.runs import RunView, runs_of

pages = APIRouter(include_in_schema=False)
api = APIRouter(prefix="/api/v1", tags=["campaigns"])


@dataclass(frozen=True)
class CampaignPage:
    """A campaign with its runs and what each spent."""

    info: CampaignInfo
    runs: list[RunView]
    modes: dict[str, str | None]
    spend: dict[str, LedgerTotals]
    """The ledger rolled up per run, by run stream (a run with no call yet: none)."""

    def json(self) -> JSON:
        """The campaign, its runs as `labrxiv runs --json` shows them, their spend."""
        return {
            "campaign": asdict(self.info),
            "runs": runs_json(self.runs, self.modes),
            "spend": {run: asdict(totals) for run, totals in self.spend.items()},
        }


def _campaign(store: EventStore, conn: Connection, text: str) -> CampaignPage:
    campaign = resolve_campaign(store, conn, text)
    found = [c for c in campaigns_of(conn) if c.campaign == campaign]
    if not found:
        raise NotFound(f"campaign {campaign} is not in the read models yet")
    spend = {t.key: t for t in ledger_totals(conn, by="run", campaign=campaign) if t.key}
    runs = runs_of(conn, campaign=campaign)
    return CampaignPage(found[0], runs, campaign_modes(conn), spend)


@pages.get("/campaigns")
def campaigns_page(request: Request, conn: Conn) -> Response:
    """Every campaign, the first started first."""
    return render(request, "campaigns.html", {"campaigns": campaigns_of(conn)})


@pages.get("/campaigns/{campaign}")
def campaign_page(request: Request, store: Store, conn: Conn, campaign: str) -> Response:
    """A campaign: its runs (kept current by the page's script) and its curves."""
    shown = _campaign(store, conn, campaign)
    context: dict[str, Any] = {"page": shown, "c": shown.info, "axes": list(AXES)}
    return render(request, "campaign.html", context)


@pages.get("/campaigns/{campaign}/curves/{axis}.svg")
def curve_image(store: Store, conn: Conn, campaign: str, axis: str) -> Response:
    """The campaign's runs' best score so far against `axis`, as an SVG image."""
    if axis not in AXES:
        raise NotFound(f"no curve against {axis} (one of {', '.join(AXES)})")
    name = resolve_campaign(store, conn, campaign)
    assert name is not None
    svg = curve_svg(curve_points(conn, campaign=name), axis)
    headers = {"Cache-Control": "no-store"}
    return Response(svg, media_type="image/svg+xml", headers=headers)


@api.get("/campaigns", summary="Every campaign (as `labrxiv campaigns --json`)")
def campaigns_api(conn: Conn) -> Response:
    """Id, task, mode, policy, labs, runs, status, best score, start."""
    return json_response(campaigns_of(conn))


@api.get("/campaigns/{campaign}", summary="One campaign with its runs and their spend")
def campaign_api(store: Store, conn: Conn, campaign: str) -> Response:
    """The campaign (its id or a prefix), its runs' rows, and the ledger per run."""
    return json_response(_campaign(store, conn, campaign).json())
