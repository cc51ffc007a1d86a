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

from sqlalchemy import Connection, case, delete, func, select
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
    runs: int
    """How many runs it has (`runs_of` lists them, a page at a time)."""
    status: str
    """`finished` once `campaign.finished` is in the log (or every run finished);
    `interrupted` when a stop left some of its runs unfinished and none is running (what
    `labrxiv resume` goes on with); else `running`."""
    finish_reason: str | None
    best: float | None
    """Best score of any of its runs so far: normalized, else raw in the metric's
    direction (`runstate.best`)."""
    started_at: datetime | None


def campaigns_of(conn: Connection, campaign: str | None = None) -> list[CampaignInfo]:
    """Every campaign (or the one named), the first started first: those of the campaigns
    read model and those only its runs name (a log with no `campaign.started`), each
    summed up from its runs' rows by the database (a campaign of 10,000 runs is one
    aggregate, not 10,000 rows). As fresh as the two read models' checkpoints."""
    query = select(CAMPAIGNS)
    if campaign is not None:
        query = query.where(CAMPAIGNS.c.campaign == campaign)
    stored = {row["campaign"]: dict(row) for row in conn.execute(query).mappings()}
    groups: dict[str, list[_Group]] = defaultdict(list)
    for group in _groups(conn, campaign):
        groups[group.campaign].append(group)
    infos = [
        _info(conn, c, stored.get(c), groups.get(c, [])) for c in stored.keys() | groups.keys()
    ]
    never = float("inf")
    return sorted(
        infos, key=lambda i: (i.started_at.timestamp() if i.started_at else never, i.campaign)
    )


def campaign_modes(conn: Connection) -> dict[str, str | None]:
    """Each campaign's mode, by id (campaigns with no `campaign.started` are not in it)."""
    query = select(CAMPAIGNS.c.campaign, CAMPAIGNS.c.mode)
    return {campaign: mode for campaign, mode in conn.execute(query).all()}


@dataclass(frozen=True)
class _Group:
    """A campaign's runs of one task, policy and direction of their best score, summed
    up: what a campaign's line takes from its runs' rows."""

    campaign: str
    task: str | None
    policy: str | None
    direction: Direction
    """The direction their bests rank in (a run with none: `NORMALIZED`)."""
    runs: int
    finished: int
    interrupted: int
    """Runs a stop left unfinished (`interrupted` in the runs read model)."""
    highest: float | None
    lowest: float | None
    first_event_at: datetime | None

    @property
    def best(self) -> float | None:
        """The best of their bests in `direction` (None: no run scored yet)."""
        return self.highest if self.direction == "maximize" else self.lowest


def _groups(conn: Connection, campaign: str | None) -> list[_Group]:
    """The runs of every campaign (or of one), summed up by the database per campaign,
    task, policy and direction."""
    c = RUNS.c
    direction = func.coalesce(c.best_direction, NORMALIZED)
    keys = (c.campaign, c.task, c.policy, direction)
    finished = func.sum(case((c.status == "finished", 1), else_=0))
    interrupted = func.sum(case((c.status == "interrupted", 1), else_=0))
    first = func.min(c.first_event_at)
    query = select(
        *keys,
        func.count(),
        finished,
        interrupted,
        func.max(c.best_score),
        func.min(c.best_score),
        first,
    ).where(c.campaign == campaign if campaign else c.campaign.is_not(None))
    groups = []
    for row in conn.execute(query.group_by(*keys)):
        values = list(row)
        values[-1] = as_utc(values[-1]) if values[-1] is not None else None
        groups.append(_Group(*values))
    return groups


def _best(conn: Connection, campaign: str, groups: list[_Group]) -> float | None:
    """The best of the campaign's runs' bests (`best_ranked`): when they rank in one
    direction, the best of each group's; when in several, folded in stream order from
    their rows, as `best_ranked` compares each in its own."""
    scored = [g for g in groups if g.best is not None]
    if len({g.direction for g in scored}) > 1:
        c = RUNS.c
        query = select(c.best_score, func.coalesce(c.best_direction, NORMALIZED))
        query = query.where(c.campaign == campaign, c.best_score.is_not(None))
        ranked = best_ranked((s, d) for s, d in conn.execute(query.order_by(c.stream)))
    else:
        ranked = best_ranked((g.best, g.direction) for g in scored if g.best is not None)
    return None if ranked is None else ranked[0]


def _info(
    conn: Connection, campaign: str, row: dict[str, Any] | None, groups: list[_Group]
) -> CampaignInfo:
    runs = sum(g.runs for g in groups)
    firsts = [g.first_event_at for g in groups if g.first_event_at is not None]
    reason = row["finish_reason"] if row else None
    finished = sum(g.finished for g in groups)
    stopped = sum(g.interrupted for g in groups)
    done = reason is not None or (runs > 0 and finished == runs)
    policies = sorted({g.policy for g in groups if g.policy})
    tasks = sorted({g.task for g in groups if g.task})
    started = row and row["started_at"]
    return CampaignInfo(
        campaign=campaign,
        task=row["task"] if row and row["task"] else ", ".join(tasks) or None,
        mode=row["mode"] if row else None,
        policy=", ".join(policies) or None,
        labs=row["labs"] if row and row["labs"] is not None else runs,
        runs=runs,
        status="finished"
        if done
        else "interrupted"
        if stopped and finished + stopped == runs
        else "running",
        finish_reason=reason,
        best=_best(conn, campaign, groups),
        started_at=as_utc(started) if started else (min(firsts) if firsts else None),
    )
