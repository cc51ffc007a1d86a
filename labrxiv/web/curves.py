"""A campaign's curves as SVG (`labrxiv.html_plots`): each run's best score so far
against time, attempts, tokens and dollars, from the curves read model."""

from collections.abc import Callable, Sequence

from labrxiv.html_plots import lines_plot
from projections.curves import CurvePoint

AXES: dict[str, tuple[str, Callable[[CurvePoint], float]]] = {
    "time": ("seconds since the run started", lambda p: p.elapsed_s),
    "attempts": ("scored attempts", lambda p: float(p.attempt)),
    "tokens": ("model tokens", lambda p: float(p.tokens)),
    "dollars": ("known dollars", lambda p: p.cost_usd),
}
"""The x axes a campaign's curves are drawn against: label and value of a point."""


def curve_svg(points: Sequence[CurvePoint], axis: str) -> str:
    """The best score so far of each run (its lab names the line) against `axis`."""
    label, x_of = AXES[axis]
    lines: dict[str, list[tuple[float, float]]] = {}
    for point in points:
        lines.setdefault(point.lab or point.run, []).append((x_of(point), point.best_so_far))
    for line in lines.values():
        line.sort()
    return lines_plot(f"best score so far vs {axis}", label, "best so far", lines)
