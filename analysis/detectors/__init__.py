"""The failure-mode detectors, one module per mode, and `detect`, which runs them all.

Each detector is a pure function of a run's events (`analysis.finding.Detector`) whose
findings cite the events that prove them; docs/analysis.md ("Failure modes") defines
each, with its evidence, severity and blind spots. Add one by writing it in its mode's
module with `@detector(name, mode)` and listing it here.
"""

from collections.abc import Sequence

from analysis.detectors.base import ViewDetector
from analysis.detectors.cheating import (
    handmade_predictions,
    integrity_violation,
    paper_addresses_reviewer,
    probing,
)
from analysis.detectors.context import near_window, repetition, truncations
from analysis.detectors.impatience import budget_waste, idle_time, impatience
from analysis.detectors.overconfidence import (
    misreported_claim,
    unmeasured_claim,
    weak_conclusion,
)
from analysis.detectors.parallel_experiments import (
    concurrent_runs,
    config_mismatch,
    overwritten_result,
)
from analysis.detectors.silent import silent_failure
from analysis.detectors.view import read_run
from analysis.finding import Finding
from events.recorded import Fact
from runstate.fork import Load

DETECTORS: dict[str, ViewDetector] = {
    d.name: d
    for d in (
        silent_failure,
        weak_conclusion,
        unmeasured_claim,
        misreported_claim,
        concurrent_runs,
        overwritten_result,
        config_mismatch,
        integrity_violation,
        probing,
        handmade_predictions,
        paper_addresses_reviewer,
        near_window,
        truncations,
        repetition,
        impatience,
        budget_waste,
        idle_time,
    )
}
"""Every detector, by name."""


def detect(events: Sequence[Fact], load: Load | None = None) -> list[Finding]:
    """Every detector's findings for the run whose stream is `events` (version order),
    reading the run once; a fork on its parent's events up to the fork point too, given
    `load` (`runstate.fork.Load`)."""
    run = read_run(events, load)
    return [finding for d in DETECTORS.values() for finding in d.on(run)]


__all__ = ["DETECTORS", "detect"]
