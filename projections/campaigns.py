"""The campaigns read model: one row per campaign (its task, mode, labs, start and how it
ended), folded from `campaign.started` and `campaign.finished`; shown beside its runs' rows
of the runs read model (`campaigns_of`), for `labrxiv campaigns` and for naming runs and
curve lines by their campaign's mode (isolated or archive: a hex id alone does not tell
them apart)."""

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, delete, select
from sqlmodel import Field, SQLModel

from events.envelope import as_utc
from events.payloads.experiment import Direction
from events.recorded import Recorded
from events.streams import stream_id
from events.tables import table_of
from projections.bulk import insert_rows
from projections.projector import Projector
from projections.runs import RUNS
from runstate.best import NORMALIZED, best_ranked


class CampaignRow(SQLModel, table=True):
    """A campaign as its own events tell it."""

    __tablename__ = "campaigns"

    campaign: str = Field(primary_key=True, max_length=200)
    """The campaign's id (its runs' correlation id)."""
    task: str | None = None
    mode: str | None = None
    """`isolated` or `archive`."""
    labs: int | None = None
    started_at: datetime | None = None
    """When `campaign.started` occurred."""
    finish_reason: str | None = None
    """The reason of `campaign.finished`; None until it is in the log."""


CAMPAIGNS = table_of(CampaignRow)
_KINDS = ("campaign.started", "campaign.finished")


class CampaignsProjector(Projector):
    """Folds each campaign's `campaign.started` and `campaign.finished` into its row."""

    name = "campaigns"
    cost = 0.05
    """Not measured: it looks at each event's type and keeps a few events a campaign."""
    tables = (CAMPAIGNS,)

    def apply(self, conn: Connection, events: Sequence[Recorded]) -> None:
        """Take the stored rows of the page's campaigns, fold the page in, write them back:
        a row depends only on its campaign's events, so any paging gives the same rows."""
        mine = [e for e in events if e.type in _KINDS]
        if not mine:
            return
        named = sorted({_campaign(e) for e in mine})
        query = delete(CAMPAIGNS).where(CAMPAIGNS.c.campaign.in_(named)).returning(*CAMPAIGNS.c)
        rows = {row["campaign"]: dict(row) for row in conn.execute(query).mappings()}
        for event in mine:
            campaign = _campaign(event)
            row = rows.setdefault(campaign, dict.fromkeys(CAMPAIGNS.c.keys()))
            row["campaign"] = campaign
            if event.type == "campaign.started":
                payload = event.payload
                row["task"], row["mode"], row["labs"] = (
                    payload["task"],
                    payload["mode"],
                    payload["labs"],
                )
                row["started_at"] = event.occurred_at
            else:
                row["finish_reason"] = event.payload["reason"]
        insert_rows(conn, CAMPAIGNS, list(rows.values()))


def _campaign(event: Recorded) -> str:
    return event.correlation_id or stream_id(event.stream)


@dataclass(frozen=True)
class CampaignInfo:
    """A campaign as people look at it."""

    campaign: str
    task: str | None
    mode: str | None
    """`isolated` or `archive`; None when the log holds no `campaign.started` for it."""
    policy: str | None
    """Its runs' policies, comma-separated."""
    labs: int
    runs: list[str]
    status: str
    """`finished` once `campaign.finished` is in the log (or every run finished), else
    `running`."""
    finish_reason: str | None
    best: float | None
    """Best score of any of its runs so far: normalized, else raw in the metric's
    direction (`runstate.best`)."""
    started_at: datetime | None


def campaigns_of(conn: Connection, campaign: str | None = None) -> list[CampaignInfo]:
    """Every campaign (or the one named), the first started first: those of the campaigns
    read model and those only its runs name (a log with no `campaign.started`), with
    their runs' rows. As fresh as the two read models' checkpoints."""
    query = select(CAMPAIGNS)
    if campaign is not None:
        query = query.where(CAMPAIGNS.c.campaign == campaign)
    stored = {row["campaign"]: dict(row) for row in conn.execute(query).mappings()}
    runs: dict[str, list[_RunLine]] = defaultdict(list)
    for run in _run_lines(conn, campaign):
        if run.campaign:  # a run of no campaign is in none
            runs[run.campaign].append(run)
    infos = [_info(c, stored.get(c), runs.get(c, [])) for c in stored.keys() | runs.keys()]
    never = float("inf")
    return sorted(
        infos, key=lambda i: (i.started_at.timestamp() if i.started_at else never, i.campaign)
    )


def campaign_modes(conn: Connection) -> dict[str, str | None]:
    """Each campaign's mode, by id (campaigns with no `campaign.started` are not in it)."""
    query = select(CAMPAIGNS.c.campaign, CAMPAIGNS.c.mode)
    return {campaign: mode for campaign, mode in conn.execute(query).all()}


@dataclass(frozen=True)
class _RunLine:
    """What a campaign's line takes from each of its runs' rows."""

    stream: str
    campaign: str
    task: str | None
    policy: str | None
    status: str
    best_score: float | None
    best_direction: Direction | None
    first_event_at: datetime | None

    @property
    def finished(self) -> bool:
        return self.status == "finished"


def _run_lines(conn: Connection, campaign: str | None) -> list[_RunLine]:
    """The runs of every campaign (or of one), in stream order, only the columns a
    campaign's line needs: a campaign of 10,000 runs is read in a few milliseconds."""
    c = RUNS.c
    query = select(
        c.stream, c.campaign, c.task, c.policy, c.status, c.best_score, c.best_direction,
        c.first_event_at,
    ).order_by(c.stream)  # fmt: skip
    query = query.where(c.campaign == campaign if campaign else c.campaign.is_not(None))
    lines = []
    for row in conn.execute(query):
        first = as_utc(row.first_event_at) if row.first_event_at is not None else None
        lines.append(_RunLine(*row[:7], first_event_at=first))
    return lines


def _info(campaign: str, row: dict[str, Any] | None, runs: list[_RunLine]) -> CampaignInfo:
    best = best_ranked(
        (r.best_score, r.best_direction or NORMALIZED) for r in runs if r.best_score is not None
    )
    firsts = [r.first_event_at for r in runs if r.first_event_at is not None]
    reason = row["finish_reason"] if row else None
    done = reason is not None or (bool(runs) and all(r.finished for r in runs))
    policies = sorted({r.policy for r in runs if r.policy})
    tasks = sorted({r.task for r in runs if r.task})
    started = row and row["started_at"]
    return CampaignInfo(
        campaign=campaign,
        task=row["task"] if row and row["task"] else ", ".join(tasks) or None,
        mode=row["mode"] if row else None,
        policy=", ".join(policies) or None,
        labs=row["labs"] if row and row["labs"] is not None else len(runs),
        runs=[r.stream for r in runs],
        status="finished" if done else "running",
        finish_reason=reason,
        best=None if best is None else best[0],
        started_at=as_utc(started) if started else (min(firsts) if firsts else None),
    )
