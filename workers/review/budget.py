"""The reviewers' budgets in words: why a review may make no further model call."""

from events.spend import Spend
from runstate.budget import exceeded


def spent_budget(who: str, spend: Spend, tokens: int | None, dollars: float | None) -> str | None:
    """Why `who` (the reviewers, the campaign) may make no further call, having spent
    `spend` of its `tokens` and `dollars` limits (None: no limit), or None while it may.
    A dollars limit cannot be kept once a call's cost is unknown."""
    spent = exceeded("tokens", tokens, spend.tokens)
    if spent is not None:
        return f"{who} token budget reached: {spend.tokens} of {tokens}"
    if dollars is not None and spend.unknown_cost:
        return f"{who} dollar budget: {spend.unknown_cost} call(s) of unknown cost"
    spent = exceeded("dollars", dollars, spend.dollars)
    if spent is not None:
        return f"{who} dollar budget reached: ${spend.dollars:.4f} of ${spent.limit:.4f}"
    return None
