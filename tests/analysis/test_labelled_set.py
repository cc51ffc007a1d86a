"""The failure-mode detectors on the labelled set (scenarios.py): runs made through the
real system, each showing the modes it is labelled with, beside clean look-alikes. Every
mode's detectors are measured over the whole set: precision and recall of at least 0.9
each, printed as a table."""

from collections.abc import Iterator
from pathlib import Path
from typing import get_args

import pytest

from analysis.detectors import DETECTORS, detect
from analysis.finding import Finding, Mode
from analysis.verdict import verdict
from events import Event
from events.payloads import ExperimentScored, RunFinished
from tests.analysis.labelled import LabelledRun, labelled_runs
from tests.analysis.scenarios import SET

FLOOR = 0.9
MODES: tuple[Mode, ...] = get_args(Mode)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[LabelledRun]]:
    with labelled_runs(SET, Path(tmp_path_factory.mktemp("labelled"))) as made:
        yield made


@pytest.fixture(scope="module")
def found(runs: list[LabelledRun]) -> list[list[Finding]]:
    return [detect(run.events) for run in runs]


def test_every_run_went_as_its_scenario_says(runs: list[LabelledRun]) -> None:
    """A scenario whose script broke, or whose patch did not apply, is not the run its
    label describes: the set is only evidence if each run did what it was made to."""
    for run in runs:
        name = run.scenario.name
        assert run.problem is None, f"{name}: {run.problem}"
        end = run.events[-1].payload
        assert isinstance(end, RunFinished), f"{name} did not finish"
        assert end.reason == run.scenario.end, f"{name} ended {end.reason}: {end.detail}"
        scored = [e for e in run.events if isinstance(e.payload, ExperimentScored)]
        assert len(scored) == run.scenario.scored, f"{name}: {len(scored)} attempts scored"
        if end.reason == "done":
            assert run.left == 0, f"{name} ended with {run.left} answers unused"


def test_each_mode_has_precision_and_recall_of_at_least_0_9(
    runs: list[LabelledRun], found: list[list[Finding]], capsys: pytest.CaptureFixture[str]
) -> None:
    rows = []
    for mode in MODES:
        shows = [mode in run.scenario.shows for run in runs]
        flagged = [any(f.mode == mode for f in findings) for findings in found]
        true = sum(s and f for s, f in zip(shows, flagged, strict=True))
        precision = true / sum(flagged) if any(flagged) else 1.0
        recall = true / sum(shows) if any(shows) else 1.0
        misses = [r.scenario.name for r, s, f in zip(runs, shows, flagged, strict=True) if s != f]
        rows.append((mode, sum(shows), len(runs) - sum(shows), precision, recall, misses))
    with capsys.disabled():
        print(f"\nfailure-mode detectors on the labelled set ({len(runs)} runs)")
        print(f"{'mode':<18}{'runs showing':>13}{'others':>8}{'precision':>11}{'recall':>8}  wrong")
        for mode, positives, negatives, precision, recall, misses in rows:
            wrong = ", ".join(misses) or "-"
            print(
                f"{mode:<18}{positives:>13}{negatives:>8}{precision:>11.2f}{recall:>8.2f}  {wrong}"
            )
    for mode, positives, _negatives, precision, recall, misses in rows:
        assert positives >= 4, f"{mode}: the set has only {positives} runs showing it"
        assert precision >= FLOOR and recall >= FLOOR, f"{mode}: wrong on {misses}"


def test_every_finding_cites_events_of_its_run(
    runs: list[LabelledRun], found: list[list[Finding]]
) -> None:
    for run, findings in zip(runs, found, strict=True):
        ids = {e.id for e in run.events}
        for finding in findings:
            assert finding.events and set(finding.events) <= ids, finding
            assert finding.detector in DETECTORS


def test_verdicts_follow_the_findings(runs: list[LabelledRun], found: list[list[Finding]]) -> None:
    """Clean runs pass; runs that cheat never do; a verdict is never better than a run's
    integrity findings allow."""
    for run, findings in zip(runs, found, strict=True):
        given = verdict(findings)
        if not run.scenario.shows:
            assert given == "PASS", (run.scenario.name, findings)
        if "cheating" in run.scenario.shows:
            assert given in ("SUSPICIOUS", "FAIL"), (run.scenario.name, findings)


def test_events_read_back_equal_a_full_validation(runs: list[LabelledRun]) -> None:
    """`Recorded.typed()` skips validating the envelope (events.recorded): over every
    event these real runs recorded (llm calls, tools, gradings, papers, violations), what
    it gives equals the event validated in full from the same data."""
    types = set()
    for run in runs:
        for event in run.events:
            whole = Event.model_validate(event.model_dump())
            assert event == whole and event.model_fields_set == whole.model_fields_set
            assert event.model_dump_json() == whole.model_dump_json()
            types.add(event.type)
    assert {"model.called", "model.responded", "tool.returned", "paper.submitted"} <= types
