"""The one rule of every limit: spent at its value, never with no limit."""

from events.payloads import BudgetExceeded
from runstate.budget import exceeded


def test_a_limit_is_spent_once_reached() -> None:
    assert exceeded("attempts", 3, 2) is None
    assert exceeded("attempts", 3, 3) == BudgetExceeded(budget="attempts", limit=3, used=3)
    assert exceeded("wall_seconds", 900, 901.5) == BudgetExceeded(
        budget="wall_seconds", limit=900, used=901.5
    )


def test_no_limit_is_never_spent() -> None:
    assert exceeded("tokens", None, 10**12) is None
