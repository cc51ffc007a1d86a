"""The one place where failure-mode findings join the analysis of a run.

The detectors (`analysis.detectors.detect`) and the verdict (`analysis.verdict.verdict`)
are written apart from the behaviour figures; `run_findings` joins them for one run. An
error inside them is a bug and is raised, not hidden.
"""

from dataclasses import dataclass

from analysis.detectors import detect
from analysis.finding import Finding
from analysis.verdict import verdict
from events import Event
from runstate.fork import Load


@dataclass(frozen=True)
class RunFindings:
    """What the detectors found in a run, and the verdict they add up to."""

    verdict: str
    findings: tuple[Finding, ...]


def run_findings(events: list[Event], load: Load | None = None) -> RunFindings:
    """The findings and verdict of the run whose stream is `events` (version order), a
    fork's on its parent's events too (given `load`)."""
    found = list(detect(events, load))
    return RunFindings(verdict=str(verdict(found)), findings=tuple(found))
