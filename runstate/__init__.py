"""A run's state as one pure, incremental fold of its stream.

Lab steps decide on it, budgets are checked on it, and the read side, replay and
analysis read it: every part of labrxiv that needs to understand a run folds it here,
so they agree by construction. This package imports `events` and nothing else of the
project (both `workers` and `projections` may import it).
"""

from runstate.fold import ahead, apply, fold, fold_from, start
from runstate.fork import begin, fold_standing, inherited, loader, rebase
from runstate.state import Attempt, Exchange, RunState

__all__ = [
    "Attempt",
    "Exchange",
    "RunState",
    "ahead",
    "apply",
    "begin",
    "fold",
    "fold_from",
    "fold_standing",
    "inherited",
    "loader",
    "rebase",
    "start",
]
