"""Small summaries of a run's numbers: quantiles and equal time bins."""

from collections.abc import Sequence

import numpy as np

from analysis.figures import DensityBin

HOUR_S = 3600.0


def quantile(values: Sequence[float], q: float) -> float | None:
    """The `q` quantile of `values` (linear between order statistics, numpy's default);
    None for no values."""
    if not values:
        return None
    return float(np.quantile(np.asarray(values, dtype=float), q))


def per_hour(count: int, seconds: float) -> float | None:
    """`count` per hour over `seconds`; None for no time (a rate of nothing over nothing)."""
    return count / (seconds / HOUR_S) if seconds > 0 else None


def share(part: float, whole: float) -> float | None:
    """`part` as a fraction of `whole`; None when `whole` is 0 (a share of nothing)."""
    return part / whole if whole else None


def density_bins(times: Sequence[float], duration_s: float, bins: int) -> tuple[DensityBin, ...]:
    """`times` (elapsed seconds) counted in `bins` equal slices of `[0, duration_s]`; a
    time equal to the end falls in the last slice. None for a run with no duration."""
    if duration_s <= 0 or bins < 1:
        return ()
    counts, edges = np.histogram(np.asarray(times, dtype=float), bins=bins, range=(0, duration_s))
    width = duration_s / bins
    return tuple(
        DensityBin(
            start_s=float(edges[i]),
            end_s=float(edges[i + 1]),
            actions=int(counts[i]),
            per_hour=float(counts[i]) / (width / HOUR_S),
        )
        for i in range(bins)
    )


def third(elapsed_s: float, duration_s: float) -> int:
    """0, 1 or 2: the third of `[0, duration_s]` that `elapsed_s` falls in (the end
    belongs to the last third; a run with no duration is all start)."""
    if duration_s <= 0:
        return 0
    return min(2, int(3 * elapsed_s / duration_s))
