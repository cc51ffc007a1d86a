"""Starting a campaign: N labs on one task, isolated or sharing the archive."""

import hashlib
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from events import Event
from events.ids import new_id, utcnow
from events.payloads import (
    AgentConfig,
    Budget,
    CampaignStarted,
    LlmConfig,
    ReviewConfig,
    RunStarted,
)
from events.payloads.integrity import BudgetName
from events.payloads.run import BudgetSource
from events.streams import campaign_stream, lab_run_stream
from workers.bus.base import Bus, publish
from workers.gym.card import Budgets
from workers.lab.budget import run_budget
from workers.lab.policies import uses_model

LAB_SEEDS = 1000
"""Lab i of a campaign of seed s runs with seed `s * LAB_SEEDS + i`."""


@dataclass(frozen=True)
class CampaignPlan:
    """What a campaign runs."""

    task: str
    labs: int
    papers: int
    mode: Literal["isolated", "archive"]
    seed: int
    attempts: int | None = None
    """Per-lab attempts budget (split evenly over the lab's papers).

    This and the other per-lab limits are the command's: a limit left None is the
    card's (`card`), and no limit when the card names none."""
    wall_seconds: float | None = None
    """Per-lab elapsed seconds."""
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
    """Model settings, for labs that call a model (`llm`, `agent`)."""
    agent: AgentConfig | None = None
    """What `agent` labs run."""
    sandbox: str | None = None
    """The sandbox backend chosen where the campaign starts (`RunStarted.sandbox`)."""
    deterministic: bool = False
    """The labs take turns in a fixed order (the caller runs one step at a time), so the
    same seed gives the same numbers; recorded in `campaign.started`."""
    review: ReviewConfig | None = None
    """How the campaign's papers are reviewed (None: not at all)."""
    archive_reads: Literal["all", "accepted"] = "all"
    """Which papers archive-reading labs are shown: all, or only accepted ones."""
    card: Budgets | None = None
    """The task card's budgets, for the limits the plan leaves unset (None: only the
    plan's apply)."""

    def budget(self) -> tuple[Budget, dict[BudgetName, BudgetSource]]:
        """Each lab's limits and where each came from (`workers.lab.budget.run_budget`)."""
        given = Budget(
            attempts=self.attempts,
            wall_seconds=self.wall_seconds,
            tokens=self.tokens,
            dollars=self.dollars,
            steps=self.steps,
        )
        return run_budget(self.card, given)


def deterministic_id(plan: CampaignPlan, ordinal: int) -> str:
    """A campaign id that the plan and the campaign's ordinal in its log decide: the same
    seed in a fresh log gives the same ids, paper ids and archive order (paper ids are
    derived from run streams, and ties in archive search are broken by id)."""
    attempts = plan.budget()[0].attempts
    key = f"{plan.task}:{plan.mode}:{plan.labs}:{plan.papers}:{attempts}:{plan.seed}"
    return hashlib.sha256(f"{key}:{ordinal}".encode()).hexdigest()[:12]


def start_campaign(
    bus: Bus, plan: CampaignPlan, campaign: str | None = None
) -> tuple[str, list[str]]:
    """Publish the campaign's and its runs' start events; returns (campaign id, run streams).

    `campaign`: the id to use (`deterministic_id`); a fresh random one by default."""
    campaign = campaign or uuid.uuid4().hex[:12]
    now = utcnow()
    started = campaign_started(
        campaign,
        CampaignStarted(
            task=plan.task,
            labs=plan.labs,
            mode=plan.mode,
            seed=plan.seed,
            budget=plan.campaign_budget,
            deterministic=plan.deterministic,
            review=plan.review,
        ),
        now,
    )
    runs = [lab_run_stream(campaign, index) for index in range(plan.labs)]
    events = [started]
    budget, source = plan.budget()
    for index, stream in enumerate(runs):
        run = RunStarted(
            task=plan.task,
            lab=f"lab-{index}",
            policy=plan.policy,
            seed=plan.seed * LAB_SEEDS + index,
            budget=budget,
            budget_source=source,
            reads_archive=plan.mode == "archive",
            archive_reads=plan.archive_reads,
            review_rounds=plan.review.rounds if plan.review else 0,
            papers=plan.papers,
            llm=plan.llm if uses_model(plan.policy) else None,
            agent=plan.agent,
            sandbox=plan.sandbox,
        )
        events.append(run_started(stream, run, started, now))
    publish(bus, events)
    return campaign, runs


def campaign_started(campaign: str, payload: CampaignStarted, at: datetime) -> Event:
    """The first event of campaign `campaign`'s stream."""
    return Event(
        id=new_id(),
        stream=campaign_stream(campaign),
        version=0,
        occurred_at=at,
        correlation_id=campaign,
        actor="labrxiv",
        payload=payload,
    )


def run_started(stream: str, payload: RunStarted, campaign: Event, at: datetime) -> Event:
    """The first event of a run of the campaign whose start is `campaign`."""
    return Event(
        id=new_id(),
        stream=stream,
        version=0,
        occurred_at=at,
        causation_id=campaign.id,
        correlation_id=campaign.correlation_id,
        actor=payload.lab,
        payload=payload,
    )
