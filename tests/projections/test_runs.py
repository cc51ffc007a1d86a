"""The runs read model: one row per run, read through `runs_of`, the same in pages of any size."""

from collections.abc import Iterator

import pytest
from handmade_log import RunLog, at, build, interleave

from events import Event
from events.payloads import RunInterrupted
from projections.runner import ProjectionRunner
from projections.runs import CampaignRuns, RunView, runs_of


def runs_log() -> list[Event]:
    """Campaign c1: lab a (finished, two papers) and lab b (running); lone lab c without SOTA."""
    a = RunLog("a", "lab-a", campaign="c1")
    b = RunLog("b", "lab-b", campaign="c1")
    c = RunLog("c", "lab-c")
    a.start(0)
    b.start(1)
    c.start(2)
    a.tool("call-1", "write_file", 3, 0.5)
    a.tool("call-2", "evaluate", 4, 2.0)
    a.score(1, 0.4, 0.5, 6)
    b.tool("call-1", "evaluate", 6, 1.0)
    a.paper("p-a1", 7)
    c.score(1, 3.0, None, 8)  # no SOTA: the raw score is the best
    b.invoke("call-2", "evaluate", 9)  # still running: counted as a step, not an attempt
    a.tool("call-3", "evaluate", 10, 1.0)
    a.score(2, 0.2, 0.25, 11)  # worse: the best stays
    a.paper("p-a2", 12)
    a.finish(13)
    return interleave(a, b, c)


@pytest.fixture(params=[1, 4, None], ids=["page-of-1", "pages-of-4", "at-once"])
def runs(store_url: str, request: pytest.FixtureRequest) -> Iterator[ProjectionRunner]:
    runner = build(store_url, runs_log(), step=request.param)
    yield runner
    runner.store.engine.dispose()


def test_a_row_per_run_with_its_counts(runs: ProjectionRunner) -> None:
    with runs.store.engine.connect() as conn:
        found = runs_of(conn)
    last = {e.stream: position for position, e in enumerate(runs_log(), start=1)}
    assert found == [
        RunView(
            stream="run-a",
            task="digits",
            lab="lab-a",
            policy="handmade",
            campaign="c1",
            status="finished",
            finish_reason="done",
            event_count=12,
            steps=3,
            attempts=2,
            papers=2,
            best_score=0.5,
            best_direction="maximize",
            first_event_at=at(0),
            wall_started_at=at(0),
            last_event_at=at(13),
            last_position=last["run-a"],
        ),
        RunView(
            stream="run-b",
            task="digits",
            lab="lab-b",
            policy="handmade",
            campaign="c1",
            status="running",
            finish_reason=None,
            event_count=4,
            steps=2,
            attempts=0,
            papers=0,
            best_score=None,
            first_event_at=at(1),
            wall_started_at=at(1),
            last_event_at=at(9),
            last_position=last["run-b"],
        ),
        RunView(
            stream="run-c",
            task="digits",
            lab="lab-c",
            policy="handmade",
            campaign=None,
            status="running",
            finish_reason=None,
            event_count=2,
            steps=0,
            attempts=1,
            papers=0,
            best_score=3.0,
            best_direction="maximize",
            first_event_at=at(2),
            wall_started_at=at(2),
            last_event_at=at(8),
            last_position=last["run-c"],
        ),
    ]
    assert found[0].finished and not found[1].finished
    assert found[0].elapsed_seconds == 13.0 and found[2].elapsed_seconds == 6.0
    assert [run.wall_seconds for run in found] == [run.elapsed_seconds for run in found]


@pytest.mark.parametrize("step", [1, 2, None], ids=["page-of-1", "pages-of-2", "at-once"])
def test_a_run_stood_stopped_is_interrupted_and_its_stop_no_wall_time(
    sqlite_url: str, step: int | None
) -> None:
    a = RunLog("a", "lab-a", campaign="c1")
    a.start(0)
    a.tool("call-1", "bash", 3, 0.5)
    a.add(RunInterrupted(detail="Ctrl-C"), 5)
    stopped = build(sqlite_url, interleave(a), step=step)
    with stopped.store.engine.connect() as conn:
        (run,) = runs_of(conn)
    assert run.status == "interrupted" and run.wall_seconds == 5.0
    a.tool("call-2", "bash", 3605, 0.5)  # resumed an hour later
    stopped.store.append(interleave(a)[-2:])
    stopped.catch_up()
    with stopped.store.engine.connect() as conn:
        (run,) = runs_of(conn)
    assert run.status == "running" and run.stopped_seconds == 3600.0
    assert run.wall_seconds == 5.5 and run.elapsed_seconds == 3605.5
    stopped.rebuild()  # the stop and its end in one page
    with stopped.store.engine.connect() as conn:
        assert runs_of(conn) == [run]
    stopped.store.engine.dispose()


def test_runs_of_a_campaign_or_of_streams(runs: ProjectionRunner) -> None:
    with runs.store.engine.connect() as conn:
        campaign = runs_of(conn, campaign="c1")
        streams = runs_of(conn, streams=["run-c", "run-a", "run-x"])
        both = runs_of(conn, streams=["run-b", "run-c"], campaign="c1")
        none = runs_of(conn, streams=[])
    assert [r.stream for r in campaign] == ["run-a", "run-b"]
    assert [r.stream for r in streams] == ["run-a", "run-c"]
    assert [r.stream for r in both] == ["run-b"]
    assert none == []


def test_campaign_runs_read_again_types_only_the_rows_that_changed(store_url: str) -> None:
    events = runs_log()
    assert events[-1].stream == "run-a" and events[-1].type == "run.finished"
    runner = build(store_url, events[:-1])
    rows = CampaignRuns("c1")
    try:
        with runner.store.engine.connect() as conn:
            before = rows.read(conn)
            assert before == runs_of(conn, campaign="c1")
        runner.store.append(events[-1:])
        runner.catch_up()
        with runner.store.engine.connect() as conn:
            after = rows.read(conn)
            assert after == runs_of(conn, campaign="c1")
    finally:
        runner.store.engine.dispose()
    assert [r.status for r in before] == ["running", "running"]
    assert [r.status for r in after] == ["finished", "running"]
    assert after[1] is before[1]  # run-b's row is the same: not typed again
