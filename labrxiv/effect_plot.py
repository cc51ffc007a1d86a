"""The archive's measured effect as a PNG: the best score after each paper (AgentRxiv's
generations), mean and spread over the bench's seeds for both modes, with one run's
campaigns drawn over them (matplotlib, an Agg canvas of its own)."""

from pathlib import Path

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from analysis.archive_effect import ArchiveEffect
from labrxiv.plots import Y_LABEL, Plot

EFFECT_FILE = "archive_effect.png"
MODES = ("isolated", "archive")
COLOURS = {"archive": "tab:blue", "isolated": "tab:orange"}
"""As the report's other plots draw the two campaigns (their lines in label order)."""


def effect_plot(effect: ArchiveEffect, this_run: dict[str, list[float]] | None, out: Path) -> Plot:
    """Draw `effect` (the bench's record) and `this_run` (by mode, the best normalized
    score after each paper of one seed's campaigns; None when the run is on another
    budget: it is no seed of the measurement) to `out/archive_effect.png`."""
    figure = Figure(figsize=(8, 5), dpi=100)
    FigureCanvasAgg(figure)
    ax = figure.subplots()
    drawn = this_run is not None
    ax.set_title(
        f"best score after each paper: {effect.seeds} seeds of the bench"
        + (", and this run" if drawn else "")
    )
    ax.set_xlabel("paper index in the campaign (AgentRxiv's generations)")
    ax.set_ylabel(Y_LABEL)
    ax.grid(True, alpha=0.3)
    for mode in MODES:
        mean, sd = effect.curve(mode)
        xs = list(range(1, len(mean) + 1))
        colour = COLOURS[mode]
        ax.plot(xs, mean, marker="o", color=colour, label=f"{mode}: mean of {effect.seeds} seeds")
        low = [m - s for m, s in zip(mean, sd, strict=True)]
        high = [m + s for m, s in zip(mean, sd, strict=True)]
        ax.fill_between(xs, low, high, color=colour, alpha=0.15, linewidth=0)
        mine = (this_run or {}).get(mode) or []
        if mine:
            ax.plot(
                range(1, len(mine) + 1),
                mine,
                linestyle="--",
                marker=".",
                color=colour,
                label=f"{mode}: this run",
            )
    ax.legend(fontsize=8, loc="lower right")
    figure.tight_layout()
    out.mkdir(parents=True, exist_ok=True)
    figure.savefig(out / EFFECT_FILE, format="png")
    note = (
        "Shaded: one standard deviation either side of the bench's mean "
        f"(`bench/archive_vs_isolated.py --task {effect.task} --seeds {effect.seeds}`); "
        + (
            "dashed: this run, one seed of that distribution."
            if drawn
            else "this run is not drawn: its budget is not the one measured."
        )
    )
    return Plot(EFFECT_FILE, True, note)
