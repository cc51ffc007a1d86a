"""Whether a budget is spent: the one rule of every limit labrxiv keeps (a run's attempts,
steps, wall time, tokens and dollars, its campaign's, its reviewers'), so a lab step, a
reviewer and the analysis never disagree on where a limit is."""

from events.payloads.integrity import BudgetExceeded, BudgetName


def exceeded(name: BudgetName, limit: float | None, used: float) -> BudgetExceeded | None:
    """The `budget.exceeded` of limit `name` once `used` has reached `limit` (None: no
    limit); None while some is left. A limit is spent at its value, not past it: the
    attempt, step or call that would go beyond it is never made."""
    if limit is None or used < limit:
        return None
    return BudgetExceeded(budget=name, limit=limit, used=used)
