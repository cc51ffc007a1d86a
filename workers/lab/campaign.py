"""Starting a campaign: N labs on one task, isolated or sharing the archive."""

import hashlib
import uuid
from dataclasses import dataclass
from typing import Literal

from events import Event
from events.ids import new_id, utcnow
from events.payloads import Budget, CampaignStarted, LlmConfig, RunStarted
from workers.bus.base import Bus, publish


@dataclass(frozen=True)
class CampaignPlan:
    """What a campaign runs."""

    task: str
    labs: int
    papers: int
    mode: Literal["isolated", "archive"]
    seed: int
    attempts: int
    """Per-lab attempts budget (split evenly over the lab's papers)."""
    wall_seconds: float | None = None
    policy: str = "search"
    tokens: int | None = None
    """Per-lab model tokens."""
    dollars: float | None = None
    """Per-lab model spend."""
    steps: int | None = None
    """Per-lab steps."""
    campaign_budget: Budget = Budget()
    """Limits on the whole campaign (tokens, dollars), summed over its labs."""
    llm: LlmConfig | None = None
    """Model settings, for `llm` labs."""
    deterministic: bool = False
    """The labs take turns in a fixed order (the caller runs one step at a time), so the
    same seed gives the same numbers; recorded in `campaign.started`."""


def deterministic_id(plan: CampaignPlan, ordinal: int) -> str:
    """A campaign id that the plan and the campaign's ordinal in its log decide: the same
    seed in a fresh log gives the same ids, paper ids and archive order (paper ids are
    derived from run streams, and ties in archive search are broken by id)."""
    key = f"{plan.task}:{plan.mode}:{plan.labs}:{plan.papers}:{plan.attempts}:{plan.seed}"
    return hashlib.sha256(f"{key}:{ordinal}".encode()).hexdigest()[:12]


def start_campaign(
    bus: Bus, plan: CampaignPlan, campaign: str | None = None
) -> tuple[str, list[str]]:
    """Publish the campaign's and its runs' start events; returns (campaign id, run streams).

    `campaign`: the id to use (`deterministic_id`); a fresh random one by default."""
    campaign = campaign or uuid.uuid4().hex[:12]
    now = utcnow()
    started = Event(
        id=new_id(),
        stream=f"campaign-{campaign}",
        version=0,
        occurred_at=now,
        correlation_id=campaign,
        actor="labrxiv",
        payload=CampaignStarted(
            task=plan.task,
            labs=plan.labs,
            mode=plan.mode,
            seed=plan.seed,
            budget=plan.campaign_budget,
            deterministic=plan.deterministic,
        ),
    )
    runs = []
    events = [started]
    for index in range(plan.labs):
        stream = f"run-{campaign}-{index}"
        runs.append(stream)
        events.append(
            Event(
                id=new_id(),
                stream=stream,
                version=0,
                occurred_at=now,
                causation_id=started.id,
                correlation_id=campaign,
                actor=f"lab-{index}",
                payload=RunStarted(
                    task=plan.task,
                    lab=f"lab-{index}",
                    policy=plan.policy,
                    seed=plan.seed * 1000 + index,
                    budget=Budget(
                        attempts=plan.attempts,
                        wall_seconds=plan.wall_seconds,
                        tokens=plan.tokens,
                        dollars=plan.dollars,
                        steps=plan.steps,
                    ),
                    reads_archive=plan.mode == "archive",
                    papers=plan.papers,
                    llm=plan.llm if plan.policy == "llm" else None,
                ),
            )
        )
    publish(bus, events)
    return campaign, runs
