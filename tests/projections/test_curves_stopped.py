"""The efficiency curves of a run that stood stopped (`run.interrupted`, resumed hours
later) put its attempts at the wall time it had used (`runstate.budget.wall_seconds`,
what its wall-time limit counts), not at the hours since its start: a point past the
run's own wall-time limit is no point of its curve."""

from handmade_log import RunLog, build

from events.payloads import RunInterrupted, RunResumed
from projections.curves import curve_points


def test_an_attempt_after_a_stop_is_at_the_wall_time_used(sqlite_url: str) -> None:
    run = RunLog("a", "lab-a", campaign="c1")
    run.start(0)
    run.score(1, 0.2, 0.25, 60)
    run.add(RunInterrupted(detail="Ctrl-C in labrxiv campaign"), 100)
    run.add(RunResumed(), 100 + 14 * 3600)
    run.score(2, 0.4, 0.5, 100 + 14 * 3600 + 20)
    runner = build(sqlite_url, run.events)
    with runner.store.engine.connect() as conn:
        points = curve_points(conn)
    runner.store.engine.dispose()
    assert [p.elapsed_s for p in points] == [60.0, 120.0]


def test_a_stop_without_its_resumed_ends_at_the_next_event_folded(sqlite_url: str) -> None:
    """A log written before steps recorded `run.resumed`: the stop ends at the score."""
    run = RunLog("a", "lab-a", campaign="c1")
    run.start(0)
    run.add(RunInterrupted(detail="Ctrl-C in labrxiv campaign"), 100)
    run.score(1, 0.4, 0.5, 100 + 14 * 3600 + 20)
    runner = build(sqlite_url, run.events)
    with runner.store.engine.connect() as conn:
        points = curve_points(conn)
    runner.store.engine.dispose()
    assert [p.elapsed_s for p in points] == [100.0]
