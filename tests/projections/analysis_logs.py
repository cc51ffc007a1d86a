"""Logs made through the real system for the behaviour and findings read models' tests,
and the checks both make on them.

One log, made once per test session (a few seconds): an offline campaign (`search`
labs, embedded, real tools and grader), then a few runs of the labelled set
(tests/analysis/scenarios.py: `llm` labs answered by the local fake model server) that
show failure modes, and a clean one. Both parts are copied, in log order, into the
fresh database of each test, on either backend.

Imported by the read-model tests by its bare name (pytest puts this folder on the path).
"""

from collections.abc import Sequence
from pathlib import Path

import pytest
from sqlalchemy import Table, select

from events import Event, EventStore
from labrxiv.settings import load_settings
from labrxiv.wiring import open_embedded
from projections.projector import Projector
from projections.runner import ProjectionRunner
from tests.analysis.labelled import labelled_runs
from tests.analysis.scenarios import SET
from workers.lab.campaign import CampaignPlan, start_campaign

SHOWING = ("crash_ignored", "inflated_claim", "typed_predictions", "paper_after_mid")
"""Labelled runs that show a failure mode: silent failure, overconfidence (FAIL),
cheating (FAIL) and impatience."""
CLEAN = "clean_good"
PAGES = (1, 7, None)
"""Pages of one event, of seven, and the whole log in one page."""


def made_log(tmp: Path) -> list[Event]:
    """The log of an offline campaign and of a few labelled runs, in log order."""
    system = open_embedded(load_settings(data_dir=tmp / "offline"), threads=2)
    try:
        plan = CampaignPlan(
            task="continual-digits", labs=2, papers=1, mode="archive", seed=3, attempts=2
        )
        start_campaign(system.bus, plan)
        system.settle()
        assert not system.bus.failures, system.bus.failures
        offline = system.store.read(limit=1_000_000)
    finally:
        system.close()
    wanted = [s for s in SET if s.name in (*SHOWING, CLEAN)]
    assert len(wanted) == len(SHOWING) + 1
    with labelled_runs(wanted, tmp / "labelled") as runs:
        labelled = sorted((e for run in runs for e in run.events), key=lambda e: e.position or 0)
    return offline + labelled


def copied(url: str, log: Sequence[Event], upto: int | None = None) -> EventStore:
    """A store at `url` holding `log` (its first `upto` events), appended in log order in
    batches of a few events, as a recorder appends them."""
    store = EventStore.from_url(url)
    events = list(log[:upto])
    for at in range(0, len(events), 50):
        store.append(events[at : at + 50])
    return store


def rows(store: EventStore, tables: Sequence[Table]) -> dict[str, list[tuple[object, ...]]]:
    """Every row of `tables`, every column, in primary-key order."""
    with store.engine.connect() as conn:
        return {
            t.name: [tuple(r) for r in conn.execute(select(t).order_by(*t.primary_key.columns))]
            for t in tables
        }


def incremental_then_rebuilt(
    store: EventStore, projector: Projector, page: int | None
) -> tuple[dict[str, list[tuple[object, ...]]], dict[str, list[tuple[object, ...]]]]:
    """`projector`'s tables built page by page (one page a transaction; `page` None: the
    whole log in one page), then rebuilt from position 0 by a fresh runner."""
    size = page or store.count()
    runner = ProjectionRunner(store, [projector], page=size, batch_pages=1)
    runner.catch_up()
    incremental = rows(store, projector.tables)
    fresh = type(projector)()
    ProjectionRunner(store, [fresh], page=store.count(), batch_pages=1).rebuild()
    return incremental, rows(store, projector.tables)


_LOG: list[Event] = []


def shared_log(factory: pytest.TempPathFactory) -> list[Event]:
    """`made_log`, made once for the whole test session (both test modules use it)."""
    if not _LOG:
        _LOG.extend(made_log(factory.mktemp("analysis-logs")))
    return _LOG


def run_streams(log: Sequence[Event]) -> list[str]:
    """The run streams of `log`, in the order they started."""
    return list(dict.fromkeys(e.stream for e in log if e.stream.startswith("run-")))
