"""The one place where failure-mode findings join the analysis of a run.

The detectors (`analysis.detectors.detect`) and the verdict (`analysis.verdict.verdict`)
are written apart from the behaviour figures; until both modules exist, `run_findings`
says so (None) and `labrxiv analyze` shows behaviour alone. Once they exist they are
used as they are: an error inside them is a bug and is raised, not hidden.
"""

from dataclasses import dataclass
from importlib import import_module
from importlib.util import find_spec

from analysis.finding import Finding
from events import Event
from runstate.fork import Load

MISSING = "failure-mode detectors are not installed yet (analysis.detectors, analysis.verdict)"


@dataclass(frozen=True)
class RunFindings:
    """What the detectors found in a run, and the verdict they add up to."""

    verdict: str
    findings: tuple[Finding, ...]


def available() -> bool:
    """Whether the detectors and the verdict are there to call."""
    return find_spec("analysis.detectors") is not None and find_spec("analysis.verdict") is not None


def run_findings(events: list[Event], load: Load | None = None) -> RunFindings | None:
    """The findings and verdict of the run whose stream is `events` (version order), a
    fork's on its parent's events too (given `load`); None while the detectors are not
    installed."""
    if not available():
        return None
    detect = import_module("analysis.detectors").detect
    verdict = import_module("analysis.verdict").verdict
    found = list(detect(events, load))
    return RunFindings(verdict=str(verdict(found)), findings=tuple(found))
