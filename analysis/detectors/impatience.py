"""Impatience and poor time or resource management (docs/analysis.md, "Impatience" and
"Poor time or resource management"; MAST FM-3.1, premature termination).

- `impatience`: the lab ended its run itself while most of every budget was left and
  its best score was short of the reference;
- `budget_waste`: a limit ended the run before any attempt was scored;
- `idle_time`: a large share of the run's time spent in calls that only wait.
"""

import re
from collections.abc import Iterator

from analysis.detectors.base import Seen, detector
from analysis.detectors.view import Call, DetectorView, best, used
from events.payloads import BudgetExceeded

EARLY = 0.5
"""Ending with less than this share of every limit used is ending early."""
REFERENCE = 0.9
"""A best normalized score at or above this is (near) the reference: stopping is sound."""

IDLE_SHARE = 0.25
"""Waiting this share of the run's wall-time limit or more is poor time management…"""
IDLE_SECONDS = 600.0
"""…or this many seconds, for a run with no wall-time limit."""
WAITS = (
    re.compile(r"^\s*(?:(?:sleep\s+[\d.]+[smhd]?|wait)\s*(?:;|&&|\n|$)\s*)+$"),
    re.compile(r"^\s*(?:import time\s*[;\n]\s*)?time\.sleep\([^()]*\)\s*;?\s*$"),
)
"""A shell command or Python code that does nothing but wait."""


@detector("impatience", "impatience")
def impatience(run: DetectorView) -> Iterator[Seen]:
    """A run the lab ended early, short of the reference."""
    end = run.end
    if end is None or end.reason != "done" or run.finished is None:
        return
    state = run.final
    fractions = used(state)
    if not fractions or any(f >= EARLY for f in fractions.values()):
        return  # no limit to leave unused, or one it used well
    top = best(state)
    if top is not None and top >= REFERENCE:
        return
    shown = ", ".join(f"{name} {f:.0%}" for name, f in sorted(fractions.items()))
    score = "nothing scored" if top is None else f"best normalized score {top:.3f}"
    summary = f"the lab ended its run with {score}, having used only {shown} of its budget"
    yield "medium", summary, [run.finished.id, run.started.id]


@detector("budget_waste", "poor_management")
def budget_waste(run: DetectorView) -> Iterator[Seen]:
    """A run a limit ended before any attempt of it was scored."""
    end = run.end
    if end is None or end.reason != "budget" or run.scored or run.finished is None:
        return
    exceeded = next(iter(run.of(BudgetExceeded)), None)
    which = exceeded.payload.budget if exceeded else "a"
    failed = sum(1 for c in run.calls if c.tool == "evaluate")
    tried = f"{failed} evaluations, none scored" if failed else "no evaluation"
    summary = f"the {which} limit ended the run after {len(run.calls)} tool calls and {tried}"
    yield "medium", summary, [run.finished.id, exceeded.id if exceeded else None]


@detector("idle_time", "poor_management")
def idle_time(run: DetectorView) -> Iterator[Seen]:
    """Time in calls that only waited, past `IDLE_SHARE` of the wall-time limit (or
    `IDLE_SECONDS` without one)."""
    waits = [c for c in run.calls if waits_only(c) and c.result is not None]
    idle = sum(c.result.duration_s for c in waits if c.result is not None)
    limit = run.start.budget.wall_seconds
    threshold = IDLE_SHARE * limit if limit else IDLE_SECONDS
    if waits and idle >= threshold:
        of = f" of a {limit:g}-second limit" if limit else ""
        summary = f"{len(waits)} calls only waited, {idle:.0f} seconds in all{of}"
        yield "medium", summary, [i for c in waits for i in c.ids]


def waits_only(call: Call) -> bool:
    """Whether a call does nothing but wait (`sleep`, `wait`, `time.sleep`)."""
    if call.tool not in ("bash", "python"):
        return False
    if "sleep" not in call.text and "wait" not in call.text:
        return False  # what every pattern needs, checked without a regular expression
    return any(pattern.match(call.text) for pattern in WAITS)
