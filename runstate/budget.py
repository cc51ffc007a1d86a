"""Whether a budget is spent: the one rule of every limit labrxiv keeps (a run's attempts,
steps, wall time, tokens and dollars, its campaign's, its reviewers', its inspector's), so
a lab step, a reviewer, the inspector and the analysis never disagree on where a limit is."""

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from events.payloads import Payload
from events.payloads.integrity import BudgetExceeded, BudgetName
from events.payloads.run import RunFinished
from events.spend import Spend

if TYPE_CHECKING:
    from runstate.state import RunState


def run_used(state: "RunState", now: datetime) -> dict[BudgetName, float]:
    """What the run has used of each limit it can have by `now`: attempts made, wall time
    (`wall_used`), steps taken (tool calls labrxiv ran), model tokens and dollars counted
    by `events.spend`."""
    return {
        "attempts": len(state.attempts),
        "wall_seconds": wall_used(state, now),
        "tokens": state.spend.tokens,
        "dollars": state.spend.dollars,
        "steps": state.steps,
    }


def wall_used(state: "RunState", now: datetime) -> float:
    """The wall time the run has used by `now` (`wall_seconds` of its folded state). A
    read model that keeps no clock counts it to the run's last event (`state.last_at`)."""
    return wall_seconds(state.started_at, state.stopped_s, state.stopped_at, now)


def wall_seconds(
    started_at: datetime, stopped_s: float, stopped_at: datetime | None, now: datetime
) -> float:
    """The wall time a run has used by `now`: the seconds since `started_at` (a fork's
    goes on from its parent's: `runstate.fork.rebase`), less the `stopped_s` it stood
    stopped between each `run.interrupted` and its next event, less the time since
    `stopped_at` while it stands stopped. The one rule of a run's wall time: the lab's
    limit, the detectors and the metrics count it here, from the run's own stream.

    A run stopped in a log written before runs recorded their stops is named only by its
    campaign's `campaign.interrupted`: its stream does not say it stood stopped, so its
    stop counts as wall time used."""
    stopped = stopped_s
    if stopped_at is not None:
        stopped += max(0.0, (now - stopped_at).total_seconds())
    return (now - started_at).total_seconds() - stopped


def stood_stopped(
    stopped_s: float, stopped_at: datetime | None, kind: str, at: datetime
) -> tuple[float, datetime | None]:
    """A run's `stopped_s` and `stopped_at` (as `wall_seconds` takes them) once an event of
    type `kind` occurs at `at`: a `run.interrupted` stops the run (a second one while it
    stands stopped changes nothing), any other event, its `run.resumed` first, ends the
    stop and adds its length to `stopped_s`. A reader that folds only some of a run's
    event types folds `run.interrupted` and `run.resumed` too, so it sees every stop end
    where the run's state does (in a log written before steps recorded `run.resumed`, a
    stop ends at the next event it folds)."""
    if kind == "run.interrupted":
        return stopped_s, at if stopped_at is None else stopped_at
    if stopped_at is None:
        return stopped_s, None
    return stopped_s + max(0.0, (at - stopped_at).total_seconds()), None


STOP_TYPES = frozenset({"run.interrupted", "run.resumed"})
"""The event types that stop a run's wall clock and start it again (`stood_stopped`)."""

Span = tuple[datetime, datetime]
"""A stretch of time, from its start to its end."""


def worked(first: datetime, last: datetime, stops: Iterable[Span]) -> list[Span]:
    """The spans a run worked, from its first event to its last, each of its `stops` (from
    a `run.interrupted` to where `stood_stopped` ends it; to `last` while it stands
    stopped) left out: their lengths add up to its `wall_seconds` from its own start."""
    spans: list[Span] = []
    at = first
    for begin, end in sorted(stops):
        if begin > at:
            spans.append((at, min(begin, last)))
        at = max(at, end)
    if last > at:
        spans.append((at, last))
    return spans


def seconds_together(spans: Iterable[Span]) -> float:
    """The wall time several runs used together (a campaign's, its labs working side by
    side): the seconds in which at least one of `spans` (their `worked`) was running."""
    total, reach = 0.0, None
    for begin, end in sorted(spans):
        if reach is None or begin > reach:
            total += (end - begin).total_seconds()
            reach = end
        elif end > reach:
            total += (end - reach).total_seconds()
            reach = end
    return total


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
    """The limit reached; None: its dollar limit cannot be kept, the next call's model
    having no price (`unpriced`) or some of what it spent being of unknown cost
    (`budget.spent.unknown_cost`)."""
    unpriced: str | None = None
    """The next call's model, when the dollar limit cannot be kept because it has no price."""

    def said(self) -> str:
        """The reason in words, with the numbers."""
        who, spent = self.budget.who, self.budget.spent
        if self.unpriced is not None:
            return f"{who} dollar budget cannot be kept for {self.unpriced}: it has no price"
        if self.exceeded is None:
            return (
                f"{who} dollar budget cannot be kept: {spent.unknown_cost} call(s) of unknown "
                "cost (a model with no price, or answers without usage)"
            )
        if self.exceeded.budget == "tokens":
            return f"{who} token budget reached: {spent.tokens} of {self.budget.tokens}"
        return f"{who} dollar budget reached: ${spent.dollars:.4f} of ${self.exceeded.limit:.4f}"


def model_budget_spent(
    *budgets: ModelBudget, unpriced: str | None = None
) -> ModelBudgetSpent | None:
    """The first of `budgets` (in the order given) that allows no further model call, and
    why; None while every one allows one. `unpriced`: the next call's model when the
    price table has no price for it.

    A limit reached (tokens, then dollars) comes before a dollar limit that cannot be
    kept: known costs are a lower bound of what was spent, so a limit they reach is
    reached whatever the unknown costs were. A dollar limit is not kept as if an unknown
    cost were $0: no call is made on it to a model with no price, and once an unknown
    cost is counted, no further call."""
    for budget in budgets:
        spent = exceeded("tokens", budget.tokens, budget.spent.tokens) or exceeded(
            "dollars", budget.dollars, budget.spent.dollars
        )
        if spent is not None:
            return ModelBudgetSpent(budget, spent)
    if unpriced is not None:
        for budget in budgets:
            if budget.dollars is not None:
                return ModelBudgetSpent(budget, None, unpriced)
    for budget in budgets:
        if budget.dollars is not None and budget.spent.unknown_cost:
            return ModelBudgetSpent(budget, None)
    return None
