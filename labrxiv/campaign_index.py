"""The campaigns of a log, for `labrxiv campaigns` and for naming runs and curve lines by
their campaign's mode (isolated or archive: a hex id alone does not tell them apart).

There is no campaigns read model: a campaign is its `campaign.started` and
`campaign.finished` events (few: found through the log's index on type) joined with its
runs' rows in the runs read model.
"""

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection

from events import EventStore
from events.streams import stream_id
from projections.runs import RunView, runs_of


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
    """Best normalized score of any of its runs so far."""
    started_at: datetime | None


def campaign_index(store: EventStore, conn: Connection) -> list[CampaignInfo]:
    """Every campaign, the first started first."""
    started: dict[str, dict[str, object]] = {}
    ended: dict[str, str] = {}
    for record in store.iter_records(types=["campaign.started", "campaign.finished"]):
        campaign = record.correlation_id or stream_id(record.stream)
        if record.type == "campaign.started":
            started[campaign] = {**record.payload, "at": record.occurred_at}
        else:
            ended[campaign] = record.payload["reason"]
    runs: dict[str, list[RunView]] = defaultdict(list)
    for run in runs_of(conn):
        if run.campaign:
            runs[run.campaign].append(run)
    infos = [
        _info(c, started.get(c, {}), ended.get(c), runs.get(c, []))
        for c in started.keys() | runs.keys()
    ]
    never = float("inf")
    return sorted(
        infos, key=lambda i: (i.started_at.timestamp() if i.started_at else never, i.campaign)
    )


def campaign_modes(store: EventStore, conn: Connection) -> dict[str, str | None]:
    """Each campaign's mode, by id."""
    return {info.campaign: info.mode for info in campaign_index(store, conn)}


def _info(
    campaign: str, started: dict[str, object], reason: str | None, runs: list[RunView]
) -> CampaignInfo:
    scores = [r.best_score for r in runs if r.best_score is not None]
    firsts = [r.first_event_at for r in runs if r.first_event_at is not None]
    done = reason is not None or (bool(runs) and all(r.finished for r in runs))
    policies = sorted({r.policy for r in runs if r.policy})
    tasks = sorted({r.task for r in runs if r.task})
    at = started.get("at")
    return CampaignInfo(
        campaign=campaign,
        task=str(started["task"]) if "task" in started else ", ".join(tasks) or None,
        mode=str(started["mode"]) if "mode" in started else None,
        policy=", ".join(policies) or None,
        labs=int(started["labs"]) if "labs" in started else len(runs),  # type: ignore[call-overload]
        runs=[r.stream for r in runs],
        status="finished" if done else "running",
        finish_reason=reason,
        best=max(scores) if scores else None,
        started_at=at if isinstance(at, datetime) else (min(firsts) if firsts else None),
    )
