"""Whether a budget is spent: the one rule of every limit labrxiv keeps (a run's attempts,
steps, wall time, tokens and dollars, its campaign's, its reviewers', its inspector's), so
a lab step, a reviewer, the inspector and the analysis never disagree on where a limit is."""

from dataclasses import dataclass
from typing import TYPE_CHECKING

from events.payloads import Payload
from events.payloads.integrity import BudgetExceeded, BudgetName
from events.payloads.run import RunFinished
from events.spend import Spend

if TYPE_CHECKING:
    from runstate.state import RunState


def run_used(state: "RunState", elapsed_s: float) -> dict[BudgetName, float]:
    """What the run has used of each limit it can have, `elapsed_s` its wall time so far
    (less the time it stood stopped): attempts made, steps taken (tool calls labrxiv ran),
    model tokens and dollars counted by `events.spend`."""
    return {
        "attempts": len(state.attempts),
        "wall_seconds": elapsed_s,
        "tokens": state.spend.tokens,
        "dollars": state.spend.dollars,
        "steps": state.steps,
    }


def exceeded(name: BudgetName, limit: float | None, used: float) -> BudgetExceeded | None:
    """The `budget.exceeded` of limit `name` once `used` has reached `limit` (None: no
    limit); None while some is left. A limit is spent at its value, not past it: the
    attempt, step or call that would go beyond it is never made."""
    if limit is None or used < limit:
        return None
    return BudgetExceeded(budget=name, limit=limit, used=used)


def ended_by(spent: BudgetExceeded) -> list[Payload]:
    """The events that end a run whose limit `spent` is used up: the `budget.exceeded`,
    then `run.finished` with reason `budget`."""
    return [spent, RunFinished(reason="budget", detail=f"{spent.budget} limit")]


@dataclass(frozen=True)
class ModelBudget:
    """One holder's limits on model use and what it spent, counted by `events.spend`."""

    who: str
    """Whose budget, in words: `run`, `campaign`, `reviewer`, `inspector`."""
    tokens: int | None
    """Its token limit (None: no limit)."""
    dollars: float | None
    """Its dollar limit (None: no limit)."""
    spent: Spend


@dataclass(frozen=True)
class ModelBudgetSpent:
    """Why no further model call may be made on `budget`."""

    budget: ModelBudget
    exceeded: BudgetExceeded | None
    """The limit reached; None: its dollar limit cannot be kept, some of what it spent
    being of unknown cost (`budget.spent.unknown_cost`)."""

    def said(self) -> str:
        """The reason in words, with the numbers."""
        who, spent = self.budget.who, self.budget.spent
        if self.exceeded is None:
            return (
                f"{who} dollar budget cannot be kept: {spent.unknown_cost} call(s) of unknown "
                "cost (a model with no price, or answers without usage)"
            )
        if self.exceeded.budget == "tokens":
            return f"{who} token budget reached: {spent.tokens} of {self.budget.tokens}"
        return f"{who} dollar budget reached: ${spent.dollars:.4f} of ${self.exceeded.limit:.4f}"


def model_budget_spent(*budgets: ModelBudget) -> ModelBudgetSpent | None:
    """The first of `budgets` (in the order given) that allows no further model call, and
    why; None while every one allows one.

    A limit reached (tokens, then dollars) comes before a dollar limit that cannot be
    kept: known costs are a lower bound of what was spent, so a limit they reach is
    reached whatever the unknown costs were. A dollar limit is not kept as if an unknown
    cost were $0: once one is counted, no further call is made on it."""
    for budget in budgets:
        spent = exceeded("tokens", budget.tokens, budget.spent.tokens) or exceeded(
            "dollars", budget.dollars, budget.spent.dollars
        )
        if spent is not None:
            return ModelBudgetSpent(budget, spent)
    for budget in budgets:
        if budget.dollars is not None and budget.spent.unknown_cost:
            return ModelBudgetSpent(budget, None)
    return None
