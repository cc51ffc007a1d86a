"""The analysis of a run or a campaign as `labrxiv analyze` and `labrxiv serve` show it:
from the read models when they have applied the whole log (the same figures and
findings, without validating the events again), else from the log."""

from sqlalchemy import Connection

from analysis.report import Analysis, analyze_campaign, analyze_run
from events import Event, EventStore
from labrxiv.errors import NotFound
from projections.analysis_models import analysis_from_models


def analysis_of(
    store: EventStore,
    conn: Connection,
    kind: str,
    name: str,
    seed: int = 0,
    findings: bool = True,
) -> Analysis:
    """The analysis of the run stream or campaign id `name` (`kind`: "run" or
    "campaign"); `NotFound` when the log holds none of its events."""
    kept = analysis_from_models(store, conn, kind, name, seed=seed, findings=findings)
    if kept is not None:
        return kept
    if kind == "run":
        if store.last_record(name) is None:
            raise NotFound(f"run {name} has no event in the log")
        return analyze_run(store, name, findings=findings)
    result = analyze_campaign(store, name, seed=seed, findings=findings)
    if not result.runs:
        raise NotFound(f"campaign {name} has no run in the log")
    return result


def stream_events(store: EventStore, stream: str, version: int | None) -> list[Event]:
    """A stream's events, or those up to `version` (a fork's parent, to the fork point)."""
    return store.read_stream(stream, limit=None if version is None else version + 1)
