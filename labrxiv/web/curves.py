"""A campaign's curves as SVG (`labrxiv.html_plots`): each run's best score so far
against time, attempts, tokens and dollars, from the curves read model, on the axes and
with the rules of `labrxiv.plots` (the PNGs `labrxiv curves` writes)."""

from collections.abc import Sequence

from labrxiv.html_plots import empty_plot, lines_plot
from labrxiv.plots import AXES as PLOT_AXES
from labrxiv.plots import Axis, nothing_to_show
from projections.curves import CurvePoint

AXES: dict[str, Axis] = dict(zip(("time", "attempts", "tokens", "dollars"), PLOT_AXES, strict=True))
"""The x axes a campaign's curves are drawn against, by the name in the page's address."""


def curve_svg(points: Sequence[CurvePoint], axis: str) -> str:
    """The best score so far of each run (its lab names the line) against `axis`; a run
    with model calls of unknown price is left out of the dollars curve (its dollars are
    not known), and a curve whose every point is at 0 says why instead."""
    shown = AXES[axis]
    title = f"best score so far vs {axis}"
    unknown = {p.run for p in points if shown.known_cost_only and p.unknown_cost_calls > 0}
    kept = [p for p in points if p.run not in unknown]
    if nothing_to_show([shown.x(p) for p in kept]) == "all zero":
        return empty_plot(title, f"{shown.all_zero}.")
    lines: dict[str, list[tuple[float, float]]] = {}
    for point in kept:
        lines.setdefault(point.lab or point.run, []).append((shown.x(point), point.best_so_far))
    for line in lines.values():
        line.sort()
    left_out = f" ({len(unknown)} runs with calls of unknown price left out)" if unknown else ""
    return lines_plot(title + left_out, shown.label, "best so far", lines)
