"""Small plots as inline SVG text for the analysis page (`labrxiv.html_report`).

Drawn by hand rather than through matplotlib: a line, a few bars or points and two axes
need no figure machinery, the SVG is a few kilobytes instead of a base64 image, and the
page stays one file that needs nothing else to open. Every piece of text that reaches
the markup (titles, labels, run names from the log) goes through `html.escape`: run and
lab names are written by whoever wrote the log.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape

WIDTH, HEIGHT = 460, 230
LEFT, RIGHT, TOP, BOTTOM = 52, 14, 28, 40
"""Margins around the plotting area, in SVG units: room for ticks, labels and title."""
INK, GRID, ACCENT = "#222", "#ddd", "#2563eb"
PALETTE = ("#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#ca8a04")
"""The lines' colours of a plot of several, in turn."""

Point = tuple[float, float]


@dataclass(frozen=True)
class Frame:
    """The data ranges a plot maps onto its area."""

    x0: float
    x1: float
    y0: float
    y1: float

    @classmethod
    def around(cls, xs: Sequence[float], ys: Sequence[float]) -> "Frame":
        x0, x1 = min(xs, default=0.0), max(xs, default=1.0)
        y0, y1 = min([0.0, *ys]), max(ys, default=1.0)
        # A range of zero width (one point, or a flat line) would divide by zero: widen it.
        return cls(x0, x1 if x1 > x0 else x0 + 1.0, y0, y1 if y1 > y0 else y0 + 1.0)

    def at(self, x: float, y: float) -> Point:
        inner_w, inner_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
        px = LEFT + (x - self.x0) / (self.x1 - self.x0) * inner_w
        py = TOP + inner_h - (y - self.y0) / (self.y1 - self.y0) * inner_h
        return round(px, 1), round(py, 1)


def line_plot(title: str, x_label: str, y_label: str, points: Sequence[Point]) -> str:
    """A line through `points` (x ascending) with a dot on each: a running best, say."""
    if not points:
        return empty_plot(title, "nothing to draw: no point has a value")
    frame = Frame.around([p[0] for p in points], [p[1] for p in points])
    body = _line([frame.at(x, y) for x, y in points], ACCENT)
    return _svg(title, x_label, y_label, frame, body)


def lines_plot(title: str, x_label: str, y_label: str, lines: Mapping[str, Sequence[Point]]) -> str:
    """One line per name (x ascending in each), coloured in turn, each named in a legend
    and in its tooltip: the runs of a campaign, say."""
    drawn = {name: points for name, points in lines.items() if points}
    if not drawn:
        return empty_plot(title, "nothing to draw: no point has a value")
    every = [p for points in drawn.values() for p in points]
    frame = Frame.around([p[0] for p in every], [p[1] for p in every])
    body = []
    for index, (name, points) in enumerate(sorted(drawn.items())):
        colour = PALETTE[index % len(PALETTE)]
        body.append(
            _line([frame.at(*p) for p in points], colour, name)
            + f'<text x="{WIDTH - RIGHT}" y="{TOP + 12 * (index + 1)}" text-anchor="end" '
            f'font-size="10" fill="{colour}">{escape(name)}</text>'
        )
    return _svg(title, x_label, y_label, frame, "".join(body))


def bar_plot(
    title: str, x_label: str, y_label: str, bars: Sequence[tuple[float, float, float]]
) -> str:
    """Bars of (start, end, height) along x: actions per hour in each slice of a run."""
    if not bars:
        return empty_plot(title, "nothing to draw: the run has no duration")
    frame = Frame.around([b[0] for b in bars] + [b[1] for b in bars], [b[2] for b in bars])
    rects = []
    for start, end, height in bars:
        x, y = frame.at(start, height)
        x_end, base = frame.at(end, 0.0)
        rects.append(
            f'<rect x="{x}" y="{y}" width="{max(x_end - x - 1, 1):.1f}" '
            f'height="{max(base - y, 0):.1f}" fill="{ACCENT}" opacity="0.8"/>'
        )
    return _svg(title, x_label, y_label, frame, "".join(rects))


def scatter_plot(
    title: str, x_label: str, y_label: str, points: Sequence[tuple[float, float, str]]
) -> str:
    """Labelled points (x, y, name): the runs of a campaign, one figure against another.
    A point's name is its tooltip (`<title>`), escaped like all text."""
    if not points:
        return empty_plot(title, "nothing to draw: no run has both figures")
    frame = Frame.around([p[0] for p in points], [p[1] for p in points])
    dots = []
    for x, y, name in points:
        px, py = frame.at(x, y)
        dots.append(
            f'<circle cx="{px}" cy="{py}" r="4" fill="{ACCENT}" opacity="0.75">'
            f"<title>{escape(name)}</title></circle>"
        )
    return _svg(title, x_label, y_label, frame, "".join(dots))


def _line(at: Sequence[Point], colour: str, name: str | None = None) -> str:
    """A polyline through `at` (SVG coordinates) with a dot on each; a named line has its
    name as its tooltip."""
    path = " ".join(f"{x},{y}" for x, y in at)
    dots = "".join(f'<circle cx="{x}" cy="{y}" r="2.5" fill="{colour}"/>' for x, y in at)
    line = f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"'
    if name is None:
        return f"{line}/>{dots}"
    return f"{line}><title>{escape(name)}</title></polyline>{dots}"


def empty_plot(title: str, why: str) -> str:
    """A plot's place when it has nothing to show: its title and the reason, in words."""
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="plot" viewBox="0 0 {WIDTH} 60" '
        f'width="{WIDTH}" height="60" role="img">'
        f'<text x="4" y="18" font-weight="bold" fill="{INK}">{escape(title)}</text>'
        f'<text x="4" y="42" fill="#666">{escape(why)}</text></svg>'
    )


def _svg(title: str, x_label: str, y_label: str, frame: Frame, body: str) -> str:
    x_left, y_bottom = frame.at(frame.x0, frame.y0)
    x_right, y_top = frame.at(frame.x1, frame.y1)
    ticks = [
        _text(x_left, y_bottom + 14, _num(frame.x0), "middle"),
        _text(x_right, y_bottom + 14, _num(frame.x1), "end"),
        _text(x_left - 4, y_bottom + 4, _num(frame.y0), "end"),
        _text(x_left - 4, y_top + 4, _num(frame.y1), "end"),
    ]
    axes = (
        f'<line x1="{x_left}" y1="{y_top}" x2="{x_right}" y2="{y_top}" stroke="{GRID}"/>'
        f'<line x1="{x_left}" y1="{y_bottom}" x2="{x_right}" y2="{y_bottom}" stroke="{INK}"/>'
        f'<line x1="{x_left}" y1="{y_top}" x2="{x_left}" y2="{y_bottom}" stroke="{INK}"/>'
    )
    labels = (
        _text(LEFT + (WIDTH - LEFT - RIGHT) / 2, HEIGHT - 6, x_label, "middle")
        + f'<text transform="translate(12 {TOP + (HEIGHT - TOP - BOTTOM) / 2}) rotate(-90)" '
        f'text-anchor="middle" font-size="11" fill="{INK}">{escape(y_label)}</text>'
        + f'<text x="{LEFT}" y="16" font-weight="bold" fill="{INK}">{escape(title)}</text>'
    )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="plot" viewBox="0 0 {WIDTH} {HEIGHT}" '
        f'width="{WIDTH}" height="{HEIGHT}" role="img" aria-label="{escape(title)}">'
        f"{axes}{''.join(ticks)}{labels}{body}</svg>"
    )


def _text(x: float, y: float, text: str, anchor: str) -> str:
    return (
        f'<text x="{x}" y="{y}" text-anchor="{anchor}" font-size="11" fill="{INK}">'
        f"{escape(text)}</text>"
    )


def _num(value: float) -> str:
    return f"{value:.0f}" if abs(value) >= 100 or value == int(value) else f"{value:.2f}"
