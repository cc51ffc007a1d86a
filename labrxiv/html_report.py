"""The analysis as one self-contained HTML page: `labrxiv analyze TARGET --html FILE`.

The page holds everything it shows: the analysis document (`analysis.report`), each
run's trajectory (`runstate.trajectory`: steps with the ids of their events, so a
finding links to the step that holds its evidence), plots as inline SVG
(`labrxiv.html_plots`), and its own CSS and JavaScript (`labrxiv/static/`). It loads
nothing from anywhere, so it opens from a file, offline, years later.

A log is untrusted input: tool output, arguments, paper titles and findings' sentences
are text a lab wrote. The data travels as JSON in a `<script type="application/json">`
element with `<`, `>` and `&` written as `\\u003c`, `\\u003e`, `\\u0026`, so no text in it
can close the element; the page's script puts it on screen with `textContent` only; and
the page's Content-Security-Policy lets only that script (by its hash) run, so even
markup that got through would not execute.
"""

import base64
import hashlib
from collections.abc import Callable, Iterable
from dataclasses import asdict
from html import escape
from importlib.resources import files
from typing import Any

import orjson

from analysis.report import Analysis, RunAnalysis
from events import Event
from labrxiv.html_plots import bar_plot, line_plot, scatter_plot
from runstate.agent_notes import AGENT_TYPES
from runstate.trajectory import Step, steps

MAX_TRAJECTORIES = 30
"""Runs of a campaign whose trajectories the page holds; past it the page would grow with
the campaign's log (the figures and findings of every run are there regardless)."""

Load = Callable[[str, int | None], list[Event]]
"""A stream's events in version order: all of them, or up to and including a version."""


def page(result: Analysis, load: Load) -> str:
    """The HTML page of `result`, with its runs' trajectories read through `load`."""
    trajectories: dict[str, list[dict[str, Any]]] = {}
    for run in result.runs[:MAX_TRAJECTORIES]:
        trajectories[run.behaviour.run] = trajectory(run.behaviour.run, load)
    left = len(result.runs) - len(trajectories)
    data = {
        "analysis": asdict(result),
        "trajectories": trajectories,
        "trajectory_note": (
            f"{left} runs' trajectories are left out of this page (it holds the first "
            f"{MAX_TRAJECTORIES}, by stream); labrxiv analyze RUN --html FILE shows one."
            if left
            else None
        ),
    }
    plots = "".join(
        _plots_block(str(index), run_plots(run, trajectories.get(run.behaviour.run)))
        for index, run in enumerate(result.runs)
    )
    if result.kind == "campaign":
        plots += _plots_block("campaign", campaign_plots(result))
    return _assemble(f"labrxiv analysis: {result.target}", script_json(data), plots)


def trajectory(stream: str, load: Load) -> list[dict[str, Any]]:
    """The steps of the run `stream` as the page shows them (a fork's inherited steps
    first, marked), each with the ids of its events."""

    def parent(run: str, version: int) -> list[Event]:
        return load(run, version)

    return [_step(item, stream) for item, _ in steps(load(stream, None), parent)]


def _step(item: Step, stream: str) -> dict[str, Any]:
    return {
        "number": item.number,
        "stream": item.stream,
        "inherited": item.stream != stream,
        "elapsed_s": item.elapsed_s,
        "phase": item.phase,
        "actions": [asdict(a) for a in item.actions],
        "others": [*item.notes, *(t for t in item.types if _other(t))],
        "model_calls": item.model_calls,
        "tokens": item.spend.tokens,
        "dollars": item.spend.dollars,
        "unknown_cost": item.spend.unknown_cost,
        "scored": list(item.scored),
        "best": item.best,
        "events": [str(e) for e in item.events],
    }


def _other(event_type: str) -> bool:
    """Whether a step shows the type by name: not a tool call (shown as an action), not an
    agent event (shown as its note)."""
    return not event_type.startswith("tool.") and event_type not in AGENT_TYPES


def run_plots(run: RunAnalysis, shown: list[dict[str, Any]] | None) -> list[str]:
    """A run's plots: best score over steps and over time, and action density over time."""
    b = run.behaviour
    plots = []
    if shown is not None:
        best = [s for s in shown if s["best"] is not None]
        plots.append(
            line_plot(
                "best normalized score so far, by step",
                "step",
                "best score",
                [(float(s["number"]), s["best"]) for s in best],
            )
        )
        plots.append(
            line_plot(
                "best normalized score so far, over time",
                "seconds since the run started",
                "best score",
                [(s["elapsed_s"], s["best"]) for s in best],
            )
        )
    bars = [(x.start_s, x.end_s, x.per_hour) for x in b.density.bins]
    plots.append(
        bar_plot("action density over the run", "seconds since the run started", "calls/h", bars)
    )
    return plots


def campaign_plots(result: Analysis) -> list[str]:
    """A campaign's runs, their best score against action density and against dollars."""
    assert result.across is not None
    density: list[tuple[float, float, str]] = []
    cost: list[tuple[float, float, str]] = []
    for r in result.across.runs:
        if r.best is None:
            continue
        if r.per_hour is not None:
            density.append((r.per_hour, r.best, r.run))
        if not r.unknown_cost:  # a run of unknown cost has only a lower bound on its dollars
            cost.append((r.dollars, r.best, r.run))
    return [
        scatter_plot("best score against action density", "tool calls per hour", "best", density),
        scatter_plot("best score against known dollars", "dollars", "best", cost),
    ]


def script_json(data: object) -> str:
    """`data` as JSON that is safe inside a `<script>` element: `<`, `>` and `&` only ever
    occur inside JSON strings, where their `\\u` escapes mean the same characters, so no
    text can close the element or open a comment (`</script>`, `<!--`)."""
    text = orjson.dumps(data, default=str, option=orjson.OPT_NON_STR_KEYS).decode()
    return text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")


def _plots_block(index: str, svgs: Iterable[str]) -> str:
    return f'<div class="plots" data-index="{escape(index)}">{"".join(svgs)}</div>'


def _assemble(title: str, data: str, plots: str) -> str:
    static = files("labrxiv") / "static"
    css = (static / "analysis.css").read_text(encoding="utf-8")
    js = (static / "analysis.js").read_text(encoding="utf-8")
    digest = base64.b64encode(hashlib.sha256(js.encode()).digest()).decode()
    # Only the page's own script may run (by hash): no inline handler, no injected
    # script, nothing fetched. `img-src data:` is all an SVG plot could ever need.
    policy = (
        "default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
        f"script-src 'sha256-{digest}'"
    )
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{policy}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title><style>{css}</style></head><body>"
        '<main id="app"><noscript>This page draws the analysis with JavaScript; the data is '
        "in the analysis-data element of its source.</noscript></main>"
        f'<div id="plots" hidden>{plots}</div>'
        f'<script type="application/json" id="analysis-data">{data}</script>'
        f"<script>{js}</script></body></html>\n"
    )
