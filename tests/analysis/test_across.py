"""Across runs: correlations of density and cost with performance, with bootstrap
intervals, and the comparison table, including the cases where there is nothing to say."""

from dataclasses import replace
from itertools import permutations

import numpy as np
import pytest
from scipy import stats

from analysis.across import RunRow, across
from analysis.correlation import MIN_RUNS, correlate


def test_a_line_correlates_perfectly() -> None:
    x = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    up = correlate("x", "y", x, [2 * v + 1 for v in x])
    down = correlate("x", "y", x, [-(v**3) for v in x])  # monotone, not linear
    assert up.pearson is not None and up.pearson.value == pytest.approx(1.0)
    assert up.spearman is not None and up.spearman.value == pytest.approx(1.0)
    assert down.spearman is not None and down.spearman.value == pytest.approx(-1.0)
    assert down.pearson is not None and -1.0 < down.pearson.value < -0.9


def test_few_runs_get_the_exact_permutation_p_value_not_zero() -> None:
    """Three runs in perfect order are 2 of the 3! orderings as extreme: p = 1/3, where
    scipy's asymptotic value said 0 (the analysis printed `p=0` for three labs)."""
    three = correlate("x", "y", [1.0, 2.0, 3.0], [30.0, 20.0, 10.0])
    assert three.spearman is not None and three.pearson is not None
    assert three.spearman.p_value == pytest.approx(1 / 3)
    assert three.pearson.p_value == pytest.approx(1 / 3)
    # Four runs, counted over every ordering: of the 24 orderings of y against x = 1..4, those whose
    # rank correlation is as far from 0 as 0.6 (that of 2, 1, 4, 3) or farther number 10.
    x4, y4 = [1.0, 2.0, 3.0, 4.0], [2.0, 1.0, 4.0, 3.0]
    four = correlate("x", "y", x4, y4)
    assert four.spearman is not None and four.spearman.value == pytest.approx(0.6)
    rho = [stats.spearmanr(x4, order).statistic for order in _orders(y4)]
    assert sum(abs(r) >= 0.6 - 1e-12 for r in rho) == 10
    assert four.spearman.p_value == pytest.approx(10 / 24)
    # Many runs keep scipy's asymptotic value, never below what a permutation test allows.
    many = correlate("x", "y", [float(v) for v in range(9)], [float(v) for v in range(9)])
    assert many.spearman is not None and many.spearman.p_value == pytest.approx(2 / 362_880)


def _orders(values: list[float]) -> list[list[float]]:
    return [list(order) for order in permutations(values)]


def test_coefficients_match_an_independent_computation() -> None:
    rng = np.random.default_rng(7)
    x = rng.normal(size=40)
    y = 0.5 * x + rng.normal(size=40)
    c = correlate("x", "y", list(x), list(y))
    assert c.n == 40 and c.note is None
    assert c.pearson is not None and c.spearman is not None
    assert c.pearson.value == pytest.approx(float(np.corrcoef(x, y)[0, 1]))
    ranks_x, ranks_y = stats.rankdata(x), stats.rankdata(y)
    assert c.spearman.value == pytest.approx(float(np.corrcoef(ranks_x, ranks_y)[0, 1]))


def test_the_bootstrap_interval_holds_the_estimate_and_is_seeded() -> None:
    rng = np.random.default_rng(3)
    x = rng.normal(size=30)
    y = 0.3 * x + rng.normal(size=30)
    c = correlate("x", "y", list(x), list(y), resamples=500, seed=1)
    for e in (c.pearson, c.spearman):
        assert e is not None and e.low is not None and e.high is not None
        assert -1 <= e.low < e.value < e.high <= 1
        assert e.resamples == 500  # 30 varied points: every resample varies
        assert 0 <= e.p_value <= 1
    assert correlate("x", "y", list(x), list(y), resamples=500, seed=1) == c
    other = correlate("x", "y", list(x), list(y), resamples=500, seed=2)
    assert other.pearson is not None and c.pearson is not None
    assert other.pearson.value == c.pearson.value and other.pearson.low != c.pearson.low


def test_a_wide_interval_for_few_runs_a_narrow_one_for_many() -> None:
    rng = np.random.default_rng(11)
    x = rng.normal(size=400)
    y = x + rng.normal(size=400)
    few = correlate("x", "y", list(x[:8]), list(y[:8]), resamples=400)
    many = correlate("x", "y", list(x), list(y), resamples=400)
    assert few.pearson is not None and many.pearson is not None
    assert few.pearson.low is not None and few.pearson.high is not None
    assert many.pearson.low is not None and many.pearson.high is not None
    assert many.pearson.high - many.pearson.low < few.pearson.high - few.pearson.low


def test_too_few_runs_or_a_constant_figure_give_no_correlation() -> None:
    for n in range(MIN_RUNS):
        c = correlate("x", "y", [float(i) for i in range(n)], [float(i) for i in range(n)])
        assert c.n == n and c.pearson is None and c.spearman is None
        assert c.note is not None and f"needs {MIN_RUNS}" in c.note
    flat = correlate("dollars", "best", [0.0, 0.0, 0.0, 0.0], [0.1, 0.2, 0.3, 0.4])
    assert flat.pearson is None and flat.note is not None and "same dollars" in flat.note


def _row(run: str, best: float | None, per_hour: float, dollars: float, unknown: int = 0) -> RunRow:
    return RunRow(
        run=run, lab=None, task="t", policy="llm", campaign="c", finished="done", best=best,
        scored=1 if best is not None else 0, papers=1, actions=10, per_hour=per_hour,
        duration_s=3600.0, tokens=100, reasoning_tokens=10, dollars=dollars,
        priced=5, unknown_cost=unknown, best_after_share=0.5,
    )  # fmt: skip


def test_across_compares_runs_and_leaves_out_what_cannot_count() -> None:
    rows = [
        _row("run-a", 0.2, per_hour=10, dollars=1.0),
        _row("run-b", 0.4, per_hour=20, dollars=2.0),
        _row("run-c", 0.6, per_hour=30, dollars=3.5),
        _row("run-d", 0.9, per_hour=45, dollars=0.1, unknown=3),  # its cost is a lower bound
        _row("run-e", None, per_hour=50, dollars=9.0),  # never scored
    ]
    result = across(rows, resamples=200)
    assert [r.run for r in result.runs] == ["run-d", "run-c", "run-b", "run-a", "run-e"]
    density, cost = result.correlations
    assert (density.x, density.y, density.n) == ("per_hour", "best", 4)
    assert density.note == "1 run with no score left out"
    assert density.spearman is not None and density.spearman.value == pytest.approx(1.0)
    assert (cost.x, cost.n) == ("dollars", 3)
    assert cost.note is not None and "1 run with costs of unknown size left out" in cost.note
    assert cost.pearson is not None and cost.pearson.value > 0.99
    # The unpriced run counted as cheap would have turned the correlation around.
    priced_d = replace(rows[3], unknown_cost=0)
    naive = across([*rows[:3], priced_d], resamples=200).correlations[1]
    assert naive.pearson is not None and naive.pearson.value < 0


def test_across_two_runs_says_it_cannot_correlate() -> None:
    result = across([_row("run-a", 0.2, 10, 1.0), _row("run-b", 0.3, 20, 2.0)])
    assert len(result.runs) == 2
    assert all(c.pearson is None and c.note for c in result.correlations)
