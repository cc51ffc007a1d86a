"""Every budget check of a lab step, in one place: a run's limits and its campaign's.

Checked before every step (wall time, steps), before every `evaluate` (attempts) and
before every model call (tokens and dollars, of the run and of its campaign). Usage and
cost are counted by the one rule in `events.spend`, on the run's folded state. A dollars
budget that cannot be kept (a model with no price, a grading or a call of unknown cost)
ends the run with `error` rather than being kept as if the unknown cost were $0.
"""

from dataclasses import dataclass, replace
from datetime import datetime
from typing import get_args

from events.payloads import (
    Budget,
    BudgetExceeded,
    CampaignStarted,
    Payload,
    RunFinished,
)
from events.payloads.integrity import BudgetName
from events.payloads.run import BudgetSource
from events.spend import Spend
from events.streams import campaign_stream
from runstate import RunState
from runstate.budget import (
    ModelBudget,
    ModelBudgetSpent,
    ended_by,
    exceeded,
    model_budget_spent,
    run_used,
)
from workers.gym.card import Budgets
from workers.lab.campaign_spend import CampaignSpend
from workers.stream_cache import StreamCache


def run_budget(
    card: Budgets | None, given: Budget
) -> tuple[Budget, dict[BudgetName, BudgetSource]]:
    """The limits a run starts with and where each came from: every limit `given` by the
    command, else the task card's (`card`: its `[budgets]`; None when the caller has no
    card, so only the command's apply)."""
    limits: dict[BudgetName, float] = {}
    source: dict[BudgetName, BudgetSource] = {}
    for name in BUDGET_NAMES:
        commanded = getattr(given, name)
        carded = getattr(card, name, None)
        if commanded is not None:
            limits[name], source[name] = commanded, "command"
        elif carded is not None:
            limits[name], source[name] = carded, "card"
    return Budget.model_validate(limits), source


BUDGET_NAMES: tuple[BudgetName, ...] = get_args(BudgetName)
"""Every limit a run can have, in the order `Budget` lists them."""


def over_budget(state: RunState, now: datetime) -> BudgetExceeded | None:
    """The first of the run's wall-time and step limits it has used up by `now` (wall
    time less the time it stood stopped: `runstate.budget.wall_seconds`)."""
    budget = state.started.budget
    used = run_used(state, now)
    return exceeded("wall_seconds", budget.wall_seconds, used["wall_seconds"]) or exceeded(
        "steps", budget.steps, used["steps"]
    )


def out_of_attempts(state: RunState, attempts: int | None = None) -> list[Payload] | None:
    """The events that end a run asking for an attempt beyond its limit; None while
    attempts are left. `attempts`: attempts made so far, when the step made some itself."""
    used = len(state.attempts) if attempts is None else attempts
    spent = exceeded("attempts", state.started.budget.attempts, used)
    if spent is None:
        return None
    return ended_by(spent)


@dataclass(frozen=True)
class CampaignBudget:
    """A campaign's model limits and what it used (other runs' calls in flight estimated)."""

    budget: Budget
    used: Spend


def campaign_budget(
    streams: StreamCache, spend: CampaignSpend, campaign: str, stream: str
) -> CampaignBudget | None:
    """The campaign's token and dollar limits and use; None when it sets neither.

    Used: every answered call of the campaign, every grading of its attempts that called
    a model, and for each call of another run that is in flight (written ahead, no
    outcome recorded yet) that run's last answer again, as an estimate of what it will
    cost (`CampaignSpend`). `stream`'s unrecorded calls are counted by its caller."""
    started = streams.first(campaign_stream(campaign))
    if started is None:
        return None
    if not isinstance(started.payload, CampaignStarted):
        raise ValueError(f"{campaign_stream(campaign)} does not begin with campaign.started")
    budget = started.payload.budget
    if budget.tokens is None and budget.dollars is None:
        return None
    return CampaignBudget(budget, spend.used(campaign, stream))


def over_model_budget(
    seen: RunState,
    recorded: RunState,
    campaign: CampaignBudget | None,
    unpriced_model: str | None,
) -> list[Payload] | None:
    """The events that end the run before its next model call, or None to make it.

    `seen`: the run with this step's own events folded in; `recorded`: as the log has
    it (the difference is counted on top of the campaign's recorded use);
    `unpriced_model`: the model of the next call when it has no price."""
    budget = seen.started.budget
    budgets = [ModelBudget("run", budget.tokens, budget.dollars, seen.spend)]
    if campaign is not None:
        used = _with_own(campaign.used, seen.spend, recorded.spend)
        limits = campaign.budget
        budgets.append(ModelBudget("campaign", limits.tokens, limits.dollars, used))
    spent = model_budget_spent(*budgets, unpriced=unpriced_model)
    if spent is not None and spent.exceeded is not None:
        return ended_by(spent.exceeded)
    detail = _unkeepable(seen, spent)
    if detail is None:
        return None
    return [RunFinished(reason="error", detail=f"{detail} (see docs/models.md)")]


def _with_own(used: Spend, seen: Spend, recorded: Spend) -> Spend:
    """The campaign's `used` with the step's own spend (`seen` less `recorded`) on top."""
    return replace(
        used,
        input_tokens=used.input_tokens + seen.input_tokens - recorded.input_tokens,
        output_tokens=used.output_tokens + seen.output_tokens - recorded.output_tokens,
        dollars=used.dollars + seen.dollars - recorded.dollars,
        unknown_cost=used.unknown_cost + seen.unknown_cost - recorded.unknown_cost,
    )


def _unkeepable(seen: RunState, spent: ModelBudgetSpent | None) -> str | None:
    """Why a dollars budget cannot be kept, some cost being or about to be unknown."""
    if spent is None:
        return None
    if spent.unpriced is not None:
        return f"a dollars budget cannot be kept for {spent.unpriced}: it has no price"
    if seen.spend.unknown_cost_gradings:
        return (
            "a dollars budget cannot be kept: the task's grader called a model whose cost is "
            "unknown (no price, or answers without usage)"
        )
    if seen.spend.unknown_cost:
        return "a dollars budget cannot be kept: an answer of the run has an unknown cost"
    return (
        f"the campaign's dollars budget cannot be kept: {spent.budget.spent.unknown_cost} of "
        "its calls or gradings have an unknown cost"
    )
