"""The findings read model: rebuilt equals incremental row for row, on both backends and
whatever the pages; live, a running run has the findings of its events so far; and what
it holds is what the detectors find in the log."""

from unittest.mock import patch
from uuid import uuid4

import pytest
from analysis_logs import (
    PAGES,
    copied,
    incremental_then_rebuilt,
    rows,
    run_streams,
    shared_log,
)

import analysis.report as report
from analysis.findings_hook import RunFindings, run_findings
from analysis.report import analyze_campaign, analyze_run
from events import Event, EventStore
from projections.analysis_models import analysis_from_models
from projections.behaviour import BehaviourProjector
from projections.findings import FINDINGS, FINDINGS_RUNS, FindingsProjector, findings_of
from projections.runner import ProjectionRunner


@pytest.fixture(scope="module")
def log(tmp_path_factory: pytest.TempPathFactory) -> list[Event]:
    return shared_log(tmp_path_factory)


def judged(store: EventStore, run: str, upto: int | None = None) -> RunFindings | None:
    """The findings of `run`'s events (up to position `upto`), from the log."""
    events = [e for e in store.read_stream(run) if upto is None or (e.position or 0) <= upto]
    return run_findings(events)


@pytest.mark.parametrize("page", PAGES, ids=["page-1", "page-7", "page-all"])
def test_rebuilt_equals_incremental_row_for_row(
    store_url: str, log: list[Event], page: int | None
) -> None:
    store = copied(store_url, log)
    incremental, rebuilt = incremental_then_rebuilt(store, FindingsProjector(), page)
    runs = run_streams(log)
    assert [r[0] for r in incremental["findings_runs"]] == sorted(runs)
    modes = {row[FINDINGS.c.keys().index("mode")] for row in incremental["findings"]}
    assert {"silent_failure", "overconfidence", "cheating", "impatience"} <= modes
    assert rebuilt == incremental
    with store.engine.connect() as conn:
        kept = findings_of(conn)
    assert {run: kept[run] for run in runs} == {run: judged(store, run) for run in runs}
    verdicts = {f.verdict for f in kept.values()}
    assert {"PASS", "FAIL"} <= verdicts
    store.engine.dispose()


def test_a_running_run_has_its_findings_so_far(store_url: str, log: list[Event]) -> None:
    """Caught up to just before a run that shows failure modes finished: its findings are
    those of its events so far, by projectors that keep nothing between catch-ups (each a
    fresh one, as read commands make them: earlier events are read again from the log)."""
    store = copied(store_url, log)
    ends = [e for e in store.read(limit=100_000) if e.type == "run.finished"]
    with_findings = [e for e in ends if judged(store, e.stream, (e.position or 0) - 1)]
    assert with_findings, "some run should show a failure mode before it finishes"
    end = with_findings[-1]
    upto = (end.position or 0) - 1
    for limit in (upto // 3, upto - upto // 3, upto):  # three partial catch-ups
        runner = ProjectionRunner(store, [FindingsProjector()], page=7)
        runner.catch_up(limit=limit - runner.lag()[0].checkpoint)
    assert runner.lag()[0].checkpoint == upto
    with store.engine.connect() as conn:
        so_far = findings_of(conn, run=end.stream)[end.stream]
        finished = (
            conn.execute(FINDINGS_RUNS.select().where(FINDINGS_RUNS.c.run == end.stream))
            .mappings()
            .one()["finished"]
        )
    assert so_far == judged(store, end.stream, upto) and so_far.findings
    assert not finished
    runner.catch_up()
    with store.engine.connect() as conn:
        assert findings_of(conn, run=end.stream)[end.stream] == judged(store, end.stream)
    incremental = rows(store, [FINDINGS, FINDINGS_RUNS])
    runner.rebuild()
    assert rows(store, [FINDINGS, FINDINGS_RUNS]) == incremental
    store.engine.dispose()


def test_analyze_reads_findings_and_verdicts_from_the_read_models(
    sqlite_url: str, log: list[Event]
) -> None:
    store = copied(sqlite_url, log)
    runner = ProjectionRunner(store, [BehaviourProjector(), FindingsProjector()], page=50)
    runner.catch_up()
    campaigns = list(dict.fromkeys(e.correlation_id for e in log if e.correlation_id))
    with store.engine.connect() as conn:
        for campaign in campaigns:
            kept = analysis_from_models(store, conn, "campaign", campaign)
            assert kept is not None and kept == analyze_campaign(store, campaign)
            assert all(r.findings is not None for r in kept.runs)
            # Judged from the records of the one pass, or, with the records let go to
            # bound memory (a limit of 5 events), from each run read again: the same.
            with patch.object(report, "KEPT_EVENTS", 5):
                assert analyze_campaign(store, campaign) == kept
        for run in run_streams(log):
            assert analysis_from_models(store, conn, "run", run) == analyze_run(store, run)
    # The findings read model behind the log: findings are computed from the log; the
    # behaviour read model alone serves an analysis without findings.
    started = next(e for e in log if e.type == "run.started")
    late = started.model_copy(update={"id": uuid4(), "stream": "run-late", "position": None})
    store.append([late])
    ProjectionRunner(store, [BehaviourProjector()]).catch_up()
    with store.engine.connect() as conn:
        run = run_streams(log)[0]
        assert analysis_from_models(store, conn, "run", run) is None
        assert analysis_from_models(store, conn, "run", run, findings=False) is not None
