"""Efficiency curves and the AgentRxiv paper curve as PNG files (matplotlib, Agg canvas).

Lines are per lab (one per run) or per campaign. A campaign's line at x is the best
score any of its labs had reached within x of its own time, attempts, tokens or
dollars; its paper line is the best score its archive held after each paper. Best is
ranked by `runstate.best` in each run's direction (`directions`: a normalized score's
is maximize; a raw score's, for a task with no SOTA, its metric's).
Figures are drawn on their own Agg canvases, never through pyplot's global state.

A plot with nothing to show (`nothing_to_show`) is left out of a report with a
sentence saying why; `write_curves(..., every=True)` draws it anyway, with that
sentence inside the figure, for a caller that asked for every file.
"""

import textwrap
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from events.payloads.experiment import Direction
from labrxiv.errors import CannotWrite
from projections.curves import CurvePoint, PaperPoint
from runstate.best import NORMALIZED, improves

LineBy = Literal["lab", "campaign"]
Empty = Literal["no points", "all zero"]

Y_LABEL = "best normalized score so far (1 = SOTA)"


def nothing_to_show(xs: Sequence[float]) -> Empty | None:
    """Why a plot of these x values would say nothing, or None if it has something to show.

    Nothing to show: no point at all, or every x at 0. The second is a vertical stack at
    the origin that reads as "it cost nothing" when nothing was measured (tokens and
    dollars of runs that never called a model). A single point away from 0 is
    still drawn: it is one measurement.
    """
    if not xs:
        return "no points"
    if all(x == 0 for x in xs):
        return "all zero"
    return None


@dataclass(frozen=True)
class Axis:
    """One efficiency curve: its file, its x axis, and why it can be empty."""

    file: str
    title: str
    """What the plot shows, as a reader would name it."""
    label: str
    x: Callable[[CurvePoint], float]
    all_zero: str
    """Why every point can sit at x = 0: the start of the sentence left in its place."""
    known_cost_only: bool = False
    """Leave out runs with model calls of unknown price: their dollars are not known."""


AXES = (
    Axis(
        "best_vs_time.png",
        "best score against time",
        "wall seconds the run had used (stops left out)",
        lambda p: p.elapsed_s,
        "Every attempt was scored at 0 s from its run's start",
    ),
    Axis(
        "best_vs_attempts.png",
        "best score against attempts",
        "scored attempts",
        lambda p: float(p.attempt),
        "Every scored attempt is numbered 0",
    ),
    Axis(
        "best_vs_tokens.png",
        "best score against tokens",
        "model tokens used",
        lambda p: float(p.tokens),
        "No model tokens were used by these runs (an offline policy such as `search` "
        "calls no model)",
    ),
    Axis(
        "best_vs_cost.png",
        "best score against cost",
        "dollars spent (known prices)",
        lambda p: p.cost_usd,
        "No model dollars were spent by these runs (an offline policy such as `search` "
        "calls no model, or every call was free)",
        known_cost_only=True,
    ),
)
PAPER_FILE = "best_per_paper.png"
PAPER_TITLE = "best score per paper (AgentRxiv)"


@dataclass(frozen=True)
class Plot:
    """One curve as a report shows it: its PNG, or the sentence left in its place."""

    file: str
    """The PNG's name in the output folder."""
    drawn: bool
    """Whether the PNG was written."""
    note: str | None = None
    """For the reader: why the plot was left out, or what a drawn plot leaves out."""

    def markdown(self) -> str:
        """The plot's place in a markdown report: the image and its note, or the note."""
        if not self.drawn:
            return self.note or ""
        image = f"![{self.file}]({self.file})"
        return f"{image}\n\n{self.note}" if self.note else image


Point = tuple[float, float, Direction]
"""A point of a line: x, the best so far, and the direction that best ranks in."""


@dataclass(frozen=True)
class _Drawing:
    """What to draw: lines of (x, best so far, direction), and the notes that go with them."""

    file: str
    title: str
    x_label: str
    lines: dict[str, list[Point]]
    labels: dict[str, str]
    empty: str | None
    """Why the plot has nothing to show (a clause, no full stop); None if it has."""
    caveat: str | None = None
    """A sentence on what the drawn plot leaves out."""
    running_best: bool = True
    """Draw each line as its running best (steps), not as measured."""
    markersize: int = 3


def write_curves(
    points: Sequence[CurvePoint],
    papers: Sequence[PaperPoint],
    out: Path,
    by: LineBy = "lab",
    directions: Mapping[str, Direction] | None = None,
    every: bool = False,
) -> list[Plot]:
    """Write the curves to `out` (created if missing); say of each whether it was drawn.

    A curve with nothing to show is left out with a sentence saying why, and its PNG is
    removed from `out` if an earlier report left one there, so the folder never holds a
    plot its summary says was not drawn; with `every`, it is drawn anyway, with the reason
    inside the figure. `directions`: by run, the direction its best so far ranks in (the
    runs read model's `best_direction`); maximize for a run it does not name. A folder that
    cannot be made or written is `CannotWrite`.
    """
    ways = directions or {}
    many = len({p.campaign for p in points} | {p.campaign for p in papers}) > 1
    drawings = [_efficiency(points, axis, by, many, ways) for axis in AXES]
    drawings.append(_per_paper(papers, by, many, ways))
    plots = []
    try:
        out.mkdir(parents=True, exist_ok=True)
        for d in drawings:
            if d.empty is None or every:
                _draw(d, out / d.file)
                note = f"{d.empty}." if d.empty else d.caveat
                plots.append(Plot(d.file, drawn=True, note=note))
            else:
                (out / d.file).unlink(missing_ok=True)
                note = f"{d.empty}, so {d.title} is not drawn."
                plots.append(Plot(d.file, drawn=False, note=note))
    except OSError as exc:  # a folder that cannot be made or written (`--out /proc/x`)
        raise CannotWrite(f"cannot write {exc.filename or out}: {exc.strerror}") from None
    return plots


def _label(campaign: str | None, lab: str | None, by: LineBy, many: bool) -> str:
    name = campaign or "no campaign"
    if by == "campaign":
        return name
    return f"{name}/{lab or '?'}" if many else lab or "?"


def _running_best(points: list[Point]) -> tuple[list[float], list[float]]:
    """The running best of the scores, each in its direction (`runstate.best`), at each x
    in order."""
    xs: list[float] = []
    ys: list[float] = []
    best: float | None = None
    for x, y, way in sorted(points):
        if improves(way, y, best):
            best = y
        xs.append(x)
        ys.append(y if best is None else best)
    return xs, ys


def _unknown_cost(point: CurvePoint) -> int:
    return point.unknown_cost_calls


def _efficiency(
    points: Sequence[CurvePoint],
    axis: Axis,
    by: LineBy,
    many: bool,
    directions: Mapping[str, Direction],
) -> _Drawing:
    unknown: dict[str, int] = {}
    if axis.known_cost_only:
        # Calls are counted up to each point, so a run's largest count is its total.
        for p in points:
            if _unknown_cost(p) > 0:
                unknown[p.run] = max(unknown.get(p.run, 0), _unknown_cost(p))
    kept = [p for p in points if p.run not in unknown]
    names = ", ".join(
        sorted({_label(p.campaign, p.lab, "lab", many) for p in points if p.run in unknown})
    )
    calls = sum(unknown.values())
    empty = None
    match nothing_to_show([axis.x(p) for p in kept]), bool(unknown):
        case "no points", False:
            empty = "No attempt has been scored yet"
        case "no points", True:
            empty = (
                f"Every run here made model calls of unknown price ({calls} calls up to "
                "its last scored attempt)"
            )
        case "all zero", False:
            empty = axis.all_zero
        case "all zero", True:
            empty = (
                f"The runs of known cost spent no model dollars, and {names} made {calls} "
                "model calls of unknown price up to their last scored attempt"
            )
    drawing = _Drawing(axis.file, axis.title, axis.label, {}, {}, empty)
    if empty is not None:
        return drawing
    lines: dict[str, list[Point]] = defaultdict(list)
    labels: dict[str, str] = {}
    for p in kept:
        key = p.run if by == "lab" else (p.campaign or "")
        lines[key].append((axis.x(p), p.best_so_far, directions.get(p.run, NORMALIZED)))
        labels[key] = _label(p.campaign, p.lab, by, many)
    caveat = None
    if unknown:
        caveat = (
            f"Left out of {axis.title}: {names}, whose runs made {calls} model calls "
            "of unknown price up to their last scored attempt (the ledger counts them "
            "all), so their dollars are not known."
        )
    return replace(drawing, lines=dict(lines), labels=labels, caveat=caveat)


def _per_paper(
    papers: Sequence[PaperPoint], by: LineBy, many: bool, directions: Mapping[str, Direction]
) -> _Drawing:
    scored = [p for p in papers if p.best_so_far is not None]
    empty = None
    match nothing_to_show([float(p.paper_index) for p in scored]):
        case "no points":
            empty = "No paper has a scored attempt behind it yet"
        case "all zero":
            empty = "Every paper is numbered 0"
    lines: dict[str, list[Point]] = defaultdict(list)
    labels: dict[str, str] = {}
    for p in [] if empty else scored:
        key = p.run if by == "lab" else (p.campaign or "")
        way = directions.get(p.run, NORMALIZED)
        lines[key].append((float(p.paper_index), float(p.best_so_far or 0.0), way))
        labels[key] = _label(p.campaign, p.lab, by, many)
    # Per lab, a paper shows its lab's best when submitted; per campaign, the archive's best.
    return _Drawing(
        PAPER_FILE,
        PAPER_TITLE,
        "paper index in the campaign",
        dict(lines),
        labels,
        empty,
        running_best=by == "campaign",
        markersize=4,
    )


def _draw(drawing: _Drawing, path: Path) -> None:
    """Draw the lines, then the reason it is empty or what it leaves out; save as PNG."""
    figure = Figure(figsize=(8, 5), dpi=100)
    FigureCanvasAgg(figure)
    ax = figure.subplots()
    ax.set_title(drawing.title)
    ax.set_xlabel(drawing.x_label)
    ax.set_ylabel(Y_LABEL)
    ax.grid(True, alpha=0.3)
    for key in sorted(drawing.lines, key=lambda k: drawing.labels[k]):
        if drawing.running_best:
            xs, ys = _running_best(drawing.lines[key])
            drawstyle = "steps-post"
        else:
            measured = sorted(drawing.lines[key])
            xs, ys = [x for x, _, _ in measured], [y for _, y, _ in measured]
            drawstyle = "default"
        ax.plot(
            xs,
            ys,
            marker="o",
            markersize=drawing.markersize,
            label=drawing.labels[key],
            drawstyle=drawstyle,
        )
    rect = (0.0, 0.0, 1.0, 1.0)
    if drawing.empty:
        ax.set_xlim(0, 1)
        ax.text(
            0.5,
            0.5,
            _wrapped(f"{drawing.empty}.", 60),
            transform=ax.transAxes,
            ha="center",
            va="center",
            fontsize=10,
            color="0.35",
        )
    if drawing.caveat:
        figure.text(0.01, 0.01, _wrapped(drawing.caveat, 130), fontsize=8, color="0.35")
        rect = (0.0, 0.08, 1.0, 1.0)
    if drawing.lines:
        ax.legend(fontsize=8, loc="lower right")
    figure.tight_layout(rect=rect)
    figure.savefig(path, format="png")


def _wrapped(text: str, width: int) -> str:
    """A note as lines of a figure's text: markdown's backticks dropped, wrapped at `width`."""
    return textwrap.fill(text.replace("`", ""), width)
