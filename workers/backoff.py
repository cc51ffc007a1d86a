"""Retry backoff, one pure function."""

import random


def backoff_seconds(
    attempt: int, base: float = 0.5, cap: float = 30.0, rng: random.Random | None = None
) -> float:
    """Exponential backoff with full jitter: a uniform draw in [0, min(cap, base·2^attempt)]."""
    ceiling = min(cap, base * (2 ** max(0, attempt)))
    return (rng or random).uniform(0, ceiling)
