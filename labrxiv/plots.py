"""Efficiency curves and the AgentRxiv paper curve as PNG files (matplotlib, Agg canvas).

Lines are per lab (one per run) or per campaign. A campaign's line at x is the best
score any of its labs had reached within x of its own time, attempts, tokens or
dollars; its paper line is the best score its archive held after each paper.
Figures are drawn on their own Agg canvases, never through pyplot's global state.
"""

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from projections.curves import CurvePoint, PaperPoint

LineBy = Literal["lab", "campaign"]

Y_LABEL = "best normalized score so far (score / SOTA)"


@dataclass(frozen=True)
class Axis:
    """One efficiency curve: its file, its x axis, and what to say when x is all zero."""

    file: str
    label: str
    x: Callable[[CurvePoint], float]
    empty_note: str | None = None


AXES = (
    Axis("best_vs_time.png", "elapsed seconds since the run started", lambda p: p.elapsed_s),
    Axis("best_vs_attempts.png", "scored attempts", lambda p: float(p.attempt)),
    Axis(
        "best_vs_tokens.png",
        "model tokens used",
        lambda p: float(p.tokens),
        "no model tokens recorded yet (offline policy or no model events): all at 0",
    ),
    Axis(
        "best_vs_cost.png",
        "dollars spent (known prices)",
        lambda p: p.cost_usd,
        "no model cost recorded yet (offline policy or no model events): all at $0",
    ),
)
PAPER_FILE = "best_per_paper.png"


def write_curves(
    points: Sequence[CurvePoint],
    papers: Sequence[PaperPoint],
    out: Path,
    by: LineBy = "lab",
) -> list[Path]:
    """Write every curve to `out` (created if missing); returns the files written."""
    out.mkdir(parents=True, exist_ok=True)
    campaigns = {p.campaign for p in points} | {p.campaign for p in papers}
    written = [_efficiency(points, axis, out / axis.file, by, len(campaigns) > 1) for axis in AXES]
    written.append(_per_paper(papers, out / PAPER_FILE, by, len(campaigns) > 1))
    return written


def _label(campaign: str | None, lab: str | None, by: LineBy, many: bool) -> str:
    name = campaign or "no campaign"
    if by == "campaign":
        return name
    return f"{name}/{lab or '?'}" if many else lab or "?"


def _running_best(pairs: list[tuple[float, float]]) -> tuple[list[float], list[float]]:
    xs, ys, best = [], [], float("-inf")
    for x, y in sorted(pairs):
        best = max(best, y)
        xs.append(x)
        ys.append(best)
    return xs, ys


def _efficiency(
    points: Sequence[CurvePoint], axis: Axis, path: Path, by: LineBy, many: bool
) -> Path:
    figure, ax = _figure(f"best score vs {axis.label}", axis.label)
    lines: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for p in points:
        key = p.run if by == "lab" else (p.campaign or "")
        lines[key].append((axis.x(p), p.best_so_far))
    labels = {
        (p.run if by == "lab" else (p.campaign or "")): _label(p.campaign, p.lab, by, many)
        for p in points
    }
    notes = []
    if not points:
        notes.append("no scored attempts yet")
    elif axis.empty_note and all(axis.x(p) == 0 for p in points):
        # A vertical stack of points at x = 0 says nothing: say why the axis is empty.
        notes.append(axis.empty_note)
        lines.clear()
        ax.set_xlim(0, 1)
    for key in sorted(lines, key=lambda k: labels[k]):
        xs, ys = _running_best(lines[key])
        ax.plot(xs, ys, drawstyle="steps-post", marker="o", markersize=3, label=labels[key])
    return _save(figure, ax, path, notes, bool(lines))


def _per_paper(papers: Sequence[PaperPoint], path: Path, by: LineBy, many: bool) -> Path:
    figure, ax = _figure("best score per paper (AgentRxiv)", "paper index in the campaign")
    scored = [p for p in papers if p.best_so_far is not None]
    lines: dict[str, list[tuple[float, float]]] = defaultdict(list)
    labels: dict[str, str] = {}
    for p in scored:
        key = p.run if by == "lab" else (p.campaign or "")
        lines[key].append((float(p.paper_index), float(p.best_so_far or 0.0)))
        labels[key] = _label(p.campaign, p.lab, by, many)
    for key in sorted(lines, key=lambda k: labels[k]):
        if by == "campaign":
            xs, ys = _running_best(lines[key])
            ax.plot(xs, ys, drawstyle="steps-post", marker="o", markersize=4, label=labels[key])
        else:
            xs, ys = (list(v) for v in zip(*sorted(lines[key]), strict=True))
            ax.plot(xs, ys, marker="o", markersize=4, label=labels[key])
    notes = [] if scored else ["no paper with a scored attempt behind it yet"]
    return _save(figure, ax, path, notes, bool(scored))


def _figure(title: str, x_label: str) -> tuple[Figure, Axes]:
    figure = Figure(figsize=(8, 5), dpi=100)
    FigureCanvasAgg(figure)
    ax = figure.subplots()
    ax.set_title(title)
    ax.set_xlabel(x_label)
    ax.set_ylabel(Y_LABEL)
    ax.grid(True, alpha=0.3)
    return figure, ax


def _save(figure: Figure, ax: Axes, path: Path, notes: list[str], legend: bool) -> Path:
    for index, note in enumerate(notes):
        ax.text(
            0.5,
            0.5 - 0.08 * index,
            note,
            transform=ax.transAxes,
            ha="center",
            va="center",
            fontsize=10,
            color="0.35",
        )
    if legend:
        ax.legend(fontsize=8, loc="lower right")
    figure.tight_layout()
    figure.savefig(path, format="png")
    return path
