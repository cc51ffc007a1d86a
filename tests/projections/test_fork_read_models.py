"""A fork's figures in the read models are those of the trajectory it stands on, as its
folded state has them (`runstate.fork.rebase`, what the lab's budget counts): its best
score so far counts its parent's attempts, and its wall time goes on from the time its
parent had used at the fork point."""

from handmade_log import build, forked

from analysis.detectors.view import best
from projections.curves import curve_points, paper_points
from projections.runner import ProjectionRunner
from projections.runs import runs_of
from runstate.budget import wall_used
from runstate.fork import fold_standing, loader
from runstate.state import RunState


def _forked(url: str, stopped: bool = False) -> ProjectionRunner:
    return build(url, forked(stopped))


def _state(runner: ProjectionRunner) -> RunState:
    return fold_standing(runner.store.read_stream("run-f"), loader(runner.store))


def test_a_forks_best_score_in_the_runs_read_model_counts_its_parents(sqlite_url: str) -> None:
    runner = _forked(sqlite_url)
    with runner.store.engine.connect() as conn:
        (fork,) = runs_of(conn, streams=["run-f"])
    state = _state(runner)
    runner.store.engine.dispose()
    assert best(state) == 0.9
    assert (fork.best_score, fork.best_direction) == (0.9, "maximize")


def test_a_forks_curve_best_so_far_counts_its_parents(sqlite_url: str) -> None:
    runner = _forked(sqlite_url)
    with runner.store.engine.connect() as conn:
        points = curve_points(conn, runs=["run-f"])
        (paper,) = paper_points(conn)
    runner.store.engine.dispose()
    assert [(p.attempt, p.best_so_far) for p in points] == [(2, 0.9)]
    assert paper.best_so_far == 0.9


def test_a_forks_curve_time_goes_on_from_its_parents(sqlite_url: str) -> None:
    """The parent used 5 s to the fork point; the fork scores 3 s after its start."""
    runner = _forked(sqlite_url)
    state = _state(runner)
    with runner.store.engine.connect() as conn:
        (point,) = curve_points(conn, runs=["run-f"])
        (paper,) = paper_points(conn)
        (fork,) = runs_of(conn, streams=["run-f"])
    runner.store.engine.dispose()
    scored_at = runner.store.read_stream("run-f")[-2].occurred_at
    assert point.elapsed_s == 8.0 == wall_used(state, scored_at)
    assert paper.elapsed_s == 9.0 == fork.wall_seconds == wall_used(state, state.last_at)


def test_a_forks_curve_time_leaves_out_the_time_its_parent_stood_stopped(
    sqlite_url: str,
) -> None:
    runner = _forked(sqlite_url, stopped=True)
    state = _state(runner)
    with runner.store.engine.connect() as conn:
        (point,) = curve_points(conn, runs=["run-f"])
        (fork,) = runs_of(conn, streams=["run-f"])
    runner.store.engine.dispose()
    assert point.elapsed_s == 8.0
    assert fork.wall_seconds == 9.0 == wall_used(state, state.last_at)
