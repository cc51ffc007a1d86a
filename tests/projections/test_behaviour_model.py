"""The behaviour read model: rebuilt equals incremental row for row, on both backends and
whatever the pages, and its figures are those `labrxiv analyze` computes from the log."""

import random

import orjson
import pytest
from analysis_logs import PAGES, copied, incremental_then_rebuilt, rows, run_streams, shared_log

from analysis.behaviour import as_record, behaviour
from analysis.report import analyze_campaign, analyze_run
from analysis.tally import BehaviourTally
from analysis.tally_state import state_of, tally_from
from events import Event, EventStore
from projections.analysis_models import analysis_from_models
from projections.behaviour import BEHAVIOUR, BehaviourProjector, behaviours_of
from projections.runner import ProjectionRunner


@pytest.fixture(scope="module")
def log(tmp_path_factory: pytest.TempPathFactory) -> list[Event]:
    return shared_log(tmp_path_factory)


def figures_from_log(store: EventStore, run: str, upto: int | None = None) -> object:
    records = [r for r in store.iter_records(stream=run) if upto is None or r.position <= upto]
    return behaviour(records)


@pytest.mark.parametrize("page", PAGES, ids=["page-1", "page-7", "page-all"])
def test_rebuilt_equals_incremental_row_for_row(
    store_url: str, log: list[Event], page: int | None
) -> None:
    store = copied(store_url, log)
    incremental, rebuilt = incremental_then_rebuilt(store, BehaviourProjector(), page)
    runs = run_streams(log)
    assert [r[0] for r in incremental["behaviour_runs"]] == sorted(runs)
    assert rebuilt == incremental
    with store.engine.connect() as conn:
        for run in runs:
            assert behaviours_of(conn, run=run) == [figures_from_log(store, run)]
    store.engine.dispose()


def test_live_catch_ups_hold_each_run_so_far_and_end_as_the_rebuild(
    sqlite_url: str, log: list[Event]
) -> None:
    """The log appended a few events at a time, caught up partly in between with pages of
    varied sizes: at every stop each run's figures are those of its events so far."""
    rng = random.Random(3)
    store = EventStore.from_url(sqlite_url)
    runner = ProjectionRunner(store, [BehaviourProjector()], page=3, batch_pages=1)
    at, stops = 0, 0
    while at < len(log):
        size = rng.randint(1, 40)
        store.append(log[at : at + size])
        at += size
        runner.page = rng.choice([1, 2, 5, 8])
        runner.catch_up(limit=rng.choice([3, 10, None]))
        if rng.random() < 0.1:
            stops += 1
            upto = runner.lag()[0].checkpoint
            with store.engine.connect() as conn:
                for figures in behaviours_of(conn):
                    assert figures == figures_from_log(store, figures.run, upto)
    assert stops >= 3
    runner.catch_up()
    incremental = rows(store, [BEHAVIOUR])
    runner.rebuild()
    assert rows(store, [BEHAVIOUR]) == incremental


def test_analyze_reads_the_same_analysis_from_the_read_models(
    sqlite_url: str, log: list[Event]
) -> None:
    store = copied(sqlite_url, log)
    campaigns = list(dict.fromkeys(e.correlation_id for e in log if e.correlation_id))
    runner = ProjectionRunner(store, [BehaviourProjector()], page=50)
    runner.catch_up(limit=len(log) // 2)
    with store.engine.connect() as conn:  # behind the log: computed from the log instead
        assert analysis_from_models(store, conn, "campaign", campaigns[0], findings=False) is None
    runner.catch_up()
    with store.engine.connect() as conn:
        for campaign in campaigns:
            kept = analysis_from_models(store, conn, "campaign", campaign, findings=False)
            assert kept == analyze_campaign(store, campaign, findings=False)
            assert kept is not None and len(kept.runs) >= 2
        for run in run_streams(log):
            kept = analysis_from_models(store, conn, "run", run, findings=False)
            assert kept == analyze_run(store, run, findings=False)


def test_a_stored_tally_goes_on_as_one_never_stored(log: list[Event]) -> None:
    """Saved as the row keeps it (JSON text) after any event of any run, loaded and given
    the rest: the same state at the cut, and the same figures at the end."""
    records = [as_record(e) for e in log]
    for run in run_streams(log):
        stream = [r for r in records if r.stream == run]
        whole = BehaviourTally(run)
        for record in stream:
            whole.add(record)
        for cut in range(1, len(stream)):
            tally = BehaviourTally(run)
            for record in stream[:cut]:
                tally.add(record)
            kept = orjson.dumps(state_of(tally))
            loaded = tally_from(run, orjson.loads(kept))
            assert orjson.dumps(state_of(loaded)) == kept
            for record in stream[cut:]:
                loaded.add(record)
            assert loaded.result() == whole.result()
