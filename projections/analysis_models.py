"""`labrxiv analyze` from the behaviour and findings read models, when they are current.

The figures and findings a read model holds are those of the log up to its checkpoint;
at the log's head they are what `analysis.report` computes from the log itself (the
read models' tests check it), without reading and validating every event again. When a
read model is behind, None: the caller computes from the log.
"""

from sqlalchemy import Connection

from analysis.correlation import RESAMPLES
from analysis.report import Analysis, RunAnalysis, campaign_analysis, run_analysis
from events import EventStore
from projections.behaviour import BehaviourProjector, behaviours_of
from projections.checkpoints import read_checkpoint
from projections.findings import FindingsProjector, findings_of


def current(store: EventStore, conn: Connection, findings: bool = True) -> bool:
    """Whether the behaviour read model (and the findings one, if wanted) has applied the
    whole log. The head is read first: events appended after it are not asked for."""
    head = store.max_position()
    names = [BehaviourProjector.name] + ([FindingsProjector.name] if findings else [])
    return all(read_checkpoint(conn, name) >= head for name in names)


def analysis_from_models(
    store: EventStore,
    conn: Connection,
    kind: str,
    target: str,
    seed: int = 0,
    findings: bool = True,
    resamples: int = RESAMPLES,
) -> Analysis | None:
    """The analysis of `target`, a run (`kind` "run") or a campaign ("campaign"), from the
    read models; None when they are behind the log or do not hold it (a stream that is not
    a run the tally can read)."""
    if not current(store, conn, findings):
        return None
    run, campaign = (target, None) if kind == "run" else (None, target)
    figures = behaviours_of(conn, run=run, campaign=campaign)
    if not figures:
        return None
    found = findings_of(conn, run=run, campaign=campaign) if findings else {}
    if findings and any(f.run not in found for f in figures):
        return None
    analysed = [RunAnalysis(behaviour=f, findings=found.get(f.run)) for f in figures]
    if kind == "run":
        return run_analysis(analysed[0], findings)
    return campaign_analysis(target, analysed, resamples, seed, findings)
