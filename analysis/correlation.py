"""Correlation of two figures over runs, with a percentile bootstrap confidence interval.

Pearson and Spearman, as ResearchGym reports a correlation of behaviour with final
performance. The interval resamples runs with replacement (seeded: the same runs give
the same interval); a resample in which either figure is constant has no correlation
and is left out (how many were used is said). Fewer than `MIN_RUNS` runs, or a figure
that is the same for every run, give no correlation and say why.

The p-value: scipy's `pearsonr` and `spearmanr` give an asymptotic one (Student's t),
which at a handful of runs says what no test of them can: three runs in perfect
rank order got p = 0, where the two-sided permutation test's smallest possible value is
2/3! = 0.33. Up to `EXACT_UP_TO` runs it is that exact test (every ordering of one
figure against the other); above, the asymptotic value, never below 2/n!.
"""

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

EXACT_UP_TO = 7
"""Runs up to which the p-value is the exact permutation test's (7! = 5,040 orderings,
~20 ms; 8! took ~150 ms)."""
MIN_RUNS = 3
"""Below this a correlation says nothing (two points are always on a line)."""
RESAMPLES = 2000
CONFIDENCE = 0.95
CELLS = 250_000
"""Resampled values held at once: resamples are drawn in chunks, so memory stays bounded
(2,000,000 took 146 MB more at 1,000 runs, this 20 MB, and was no faster)."""


@dataclass(frozen=True)
class Estimate:
    """One correlation coefficient, its bootstrap interval and its p-value."""

    value: float
    low: float | None
    """Lower end of the interval; None when no resample had a correlation."""
    high: float | None
    p_value: float
    """Two-sided, against no correlation: exact up to `EXACT_UP_TO` runs (see above)."""
    resamples: int
    """Resamples with a correlation (both figures varied), of those drawn."""


@dataclass(frozen=True)
class Correlation:
    """How `x` goes with `y` over the runs that have both."""

    x: str
    y: str
    n: int
    pearson: Estimate | None
    spearman: Estimate | None
    note: str | None
    """Why there is no correlation, or what was left out."""


def correlate(
    x_name: str,
    y_name: str,
    x: Sequence[float],
    y: Sequence[float],
    resamples: int = RESAMPLES,
    seed: int = 0,
    confidence: float = CONFIDENCE,
    note: str | None = None,
) -> Correlation:
    """Pearson and Spearman correlation of paired values `x` and `y`, with intervals."""
    xs, ys = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    n = len(xs)
    if n < MIN_RUNS:
        why = f"{n} run{'s' if n != 1 else ''} with both figures: a correlation needs {MIN_RUNS}"
        return Correlation(x_name, y_name, n, None, None, _join(note, why))
    for name, values in ((x_name, xs), (y_name, ys)):
        if np.ptp(values) == 0:
            why = f"every run has the same {name}: no correlation"
            return Correlation(x_name, y_name, n, None, None, _join(note, why))
    # imported here: a command that correlates nothing starts without scipy (0.5 s)
    from scipy import stats

    rng = np.random.default_rng(seed)
    pearson_boot, spearman_boot = _bootstrap(xs, ys, resamples, rng)
    alpha = (1 - confidence) / 2
    pearson = stats.pearsonr(xs, ys)
    spearman = stats.spearmanr(xs, ys)
    # Spearman is Pearson of the ranks: its exact test permutes the ranks.
    rx, ry = stats.rankdata(xs), stats.rankdata(ys)
    return Correlation(
        x_name,
        y_name,
        n,
        _estimate(float(pearson.statistic), _p(xs, ys, pearson.pvalue), pearson_boot, alpha),
        _estimate(float(spearman.statistic), _p(rx, ry, spearman.pvalue), spearman_boot, alpha),
        note,
    )


def _p(xs: np.ndarray, ys: np.ndarray, asymptotic: float) -> float:
    """The two-sided p-value of Pearson's r of `xs` and `ys`: exact (every permutation)
    up to `EXACT_UP_TO` values, else `asymptotic` but no less than any permutation test
    of n values can give."""
    n = len(xs)
    if n > EXACT_UP_TO:
        return max(float(asymptotic), 2 / math.factorial(n))
    from scipy import stats

    every = stats.PermutationMethod(n_resamples=math.factorial(n))  # n! or more: exact
    return float(stats.pearsonr(xs, ys, method=every).pvalue)


def _bootstrap(
    xs: np.ndarray, ys: np.ndarray, resamples: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Pearson and Spearman coefficients of `resamples` resamples (NaN: undefined)."""
    n = len(xs)
    chunk = max(1, CELLS // n)
    pearson: list[np.ndarray] = []
    spearman: list[np.ndarray] = []
    for start in range(0, resamples, chunk):
        picks = rng.integers(0, n, size=(min(chunk, resamples - start), n))
        bx, by = xs[picks], ys[picks]
        pearson.append(_rowwise_pearson(bx, by))
        # Spearman is Pearson of the ranks, ranked again within each resample (ties:
        # average ranks, as scipy.stats.spearmanr ranks them).
        spearman.append(_rowwise_pearson(_ranks(bx), _ranks(by)))
    return np.concatenate(pearson), np.concatenate(spearman)


def _ranks(values: np.ndarray) -> np.ndarray:
    from scipy import stats

    return stats.rankdata(values, axis=1)


def _rowwise_pearson(bx: np.ndarray, by: np.ndarray) -> np.ndarray:
    dx = bx - bx.mean(axis=1, keepdims=True)
    dy = by - by.mean(axis=1, keepdims=True)
    norm = np.sqrt((dx * dx).sum(axis=1) * (dy * dy).sum(axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        r = (dx * dy).sum(axis=1) / norm
    r[norm == 0] = np.nan
    return np.clip(r, -1.0, 1.0)


def _estimate(value: float, p_value: float, boot: np.ndarray, alpha: float) -> Estimate:
    kept = boot[~np.isnan(boot)]
    low, high = _interval(kept, alpha)
    return Estimate(value, low, high, p_value, int(kept.size))


def _interval(kept: np.ndarray, alpha: float) -> tuple[float | None, float | None]:
    if kept.size == 0:
        return None, None
    low, high = np.quantile(kept, [alpha, 1 - alpha])
    return float(low), float(high)


def _join(note: str | None, more: str) -> str:
    return more if not note else f"{note}; {more}"
