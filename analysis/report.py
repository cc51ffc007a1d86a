"""The analysis of a run or a campaign from the log: every run's behaviour and findings,
and for a campaign its summed behaviour and the comparison across its runs.

What `labrxiv analyze` prints and writes (`dataclasses.asdict(analysis)` is the JSON,
docs/analysis.md "labrxiv analyze" describes it). A campaign is read in one pass over its
events in log order (`EventStore.iter_records(correlation=…)`), so memory is bounded by
its open runs and its per-run figures, never by its events.
"""

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Literal

from analysis.across import Across, across, row
from analysis.behaviour import behaviour
from analysis.campaign import CampaignBehaviour, CampaignTally
from analysis.correlation import RESAMPLES
from analysis.figures import Behaviour
from analysis.findings_hook import RunFindings, run_findings
from analysis.inspection_tools import Inspected
from analysis.streaming import behaviours
from events import EventStore
from events.gc_pause import gc_paused
from events.recorded import Recorded
from events.streams import RUN_PREFIX
from runstate.fork import loader

SCHEMA = 1
NOT_ASKED = "findings were not asked for (--no-findings)"
"""The version of the analysis' JSON shape; raised when a field changes meaning."""


@dataclass(frozen=True)
class RunAnalysis:
    """One run: its behaviour figures and what the failure-mode detectors found."""

    behaviour: Behaviour
    findings: RunFindings | None
    """None when findings were not asked for (`Analysis.findings_note`)."""


@dataclass(frozen=True)
class Analysis:
    """The analysis of a run or of a campaign."""

    schema: int
    kind: Literal["run", "campaign"]
    target: str
    """The run stream, or the campaign id."""
    runs: tuple[RunAnalysis, ...]
    campaign: CampaignBehaviour | None
    """The runs' behaviour summed (campaigns only)."""
    across: Across | None
    """The comparison table and correlations (campaigns only)."""
    findings_note: str | None
    """Why no run has findings, when none has."""
    inspections: tuple[Inspected, ...] = ()
    """The LLM inspector's verdicts (`analyze --inspector`), by run."""


def analyze_run(store: EventStore, stream: str, findings: bool = True) -> Analysis:
    """The analysis of one run (`stream` must have events); `findings=False` leaves the
    detectors out."""
    figures = behaviour(store.iter_records(stream=stream))
    return run_analysis(_with_findings(store, figures, findings), findings)


def run_analysis(run: RunAnalysis, findings: bool = True) -> Analysis:
    """The analysis of one run from its figures and findings, however they were had (from
    the log, or from the read models: `projections.analysis_models`)."""
    return Analysis(
        schema=SCHEMA,
        kind="run",
        target=run.behaviour.run,
        runs=(run,),
        campaign=None,
        across=None,
        findings_note=_note(findings),
    )


def analyze_campaign(
    store: EventStore,
    campaign: str,
    resamples: int = RESAMPLES,
    seed: int = 0,
    findings: bool = True,
) -> Analysis:
    """The analysis of a campaign's runs, from one pass over the campaign's events: the
    detectors judge each run from the records of that pass, kept while the run is open
    (bounded: `KEPT_EVENTS`; a run whose records were let go is read again)."""
    kept = OpenRuns(KEPT_EVENTS) if findings else None
    records = store.iter_records(correlation=campaign)
    runs = (
        RunAnalysis(
            behaviour=figures,
            findings=_judged(store, figures.run, kept) if findings else None,
        )
        for figures in behaviours(kept.keep(records) if kept is not None else records)
    )
    return campaign_analysis(campaign, runs, resamples, seed, findings)


KEPT_EVENTS = 100_000
"""Records of open runs kept for the detectors at most (a few KB each)."""


class OpenRuns:
    """The records of the runs a pass has seen start and not yet judged, bounded."""

    def __init__(self, limit: int = KEPT_EVENTS) -> None:
        self.limit = limit
        self._runs: dict[str, list[Recorded]] = {}
        self._dropped: set[str] = set()
        self._count = 0

    def keep(self, records: Iterable[Recorded]) -> Iterator[Recorded]:
        """`records`, passed on, with those of runs kept on the way."""
        for record in records:
            stream = record.stream
            if stream.startswith(RUN_PREFIX) and stream not in self._dropped:
                self._runs.setdefault(stream, []).append(record)
                self._count += 1
                if self._count > self.limit:
                    self._drop_largest()
            yield record

    def take(self, run: str) -> list[Recorded] | None:
        """The run's records from its start, or None when they were let go."""
        self._dropped.discard(run)
        records = self._runs.pop(run, None)
        if records is not None:
            self._count -= len(records)
            if records[0].version != 0:
                return None
        return records

    def _drop_largest(self) -> None:
        largest = max(self._runs, key=lambda run: len(self._runs[run]))
        self._count -= len(self._runs.pop(largest))
        self._dropped.add(largest)


def _judged(store: EventStore, run: str, kept: OpenRuns | None) -> RunFindings:
    # A run's typed events, its fold and its view are thousands of objects that live
    # until it is judged: with the collector on, collections walked them again and again
    # (a third of the detectors' time on LLM-shaped runs); they are freed by reference
    # counting when the run is done (`events.gc_pause`).
    with gc_paused():
        records = kept.take(run) if kept is not None else None
        if records is None:  # let go to bound memory (or not kept): read the run again
            return run_findings(store.read_stream(run), loader(store))
        return run_findings([record.typed() for record in records], loader(store))


def campaign_analysis(
    campaign: str,
    analysed: Iterable[RunAnalysis],
    resamples: int = RESAMPLES,
    seed: int = 0,
    findings: bool = True,
) -> Analysis:
    """The analysis of a campaign from its runs' figures and findings, given in the order
    `analysis.streaming.behaviours` gives them (the campaign's sums add in that order)."""
    runs: list[RunAnalysis] = []
    summed = CampaignTally()
    for run in analysed:
        summed.add(run.behaviour)
        runs.append(run)
    runs.sort(key=lambda r: r.behaviour.run)
    compared = across([row(r.behaviour) for r in runs], resamples=resamples, seed=seed)
    return Analysis(
        schema=SCHEMA,
        kind="campaign",
        target=campaign,
        runs=tuple(runs),
        campaign=summed.result(),
        across=compared,
        findings_note=_note(findings),
    )


def _with_findings(store: EventStore, figures: Behaviour, findings: bool) -> RunAnalysis:
    # Detectors read typed events (analysis.finding.Detector): the run is read again and
    # validated, which costs more than all the behaviour figures (docs/benchmarks.md).
    with gc_paused():  # as in `_judged`
        events = store.read_stream(figures.run) if findings else []
        found = run_findings(events, loader(store)) if findings else None
    return RunAnalysis(behaviour=figures, findings=found)


def _note(findings: bool) -> str | None:
    return None if findings else NOT_ASKED
