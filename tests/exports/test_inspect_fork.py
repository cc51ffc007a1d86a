"""An Inspect sample of a fork counts its events' working time as its `working_time` does
(the runs read model's wall time, `runstate.fork.rebase`): from the time the trajectory
it stands on had used at the fork point, not from the fork's own first event; its best
score is of the trajectory's attempts."""

from projections.exports.inspect_sample import sample_of
from projections.exports.runs import exported_runs
from tests.projections.handmade_log import build, forked


def test_a_forks_working_starts_go_on_from_its_parents(sqlite_url: str) -> None:
    runner = build(sqlite_url, forked(stopped=True))
    store = runner.store
    with store.engine.connect() as conn:
        (run,) = exported_runs(store, conn, ["run-f"])
    sample = sample_of(run, store.get_blob)
    store.engine.dispose()
    starts = [event["working_start"] for event in sample["events"]]
    assert starts[0] == 5.0, "the fork starts where its parent was at the fork point"
    assert starts[-1] == sample["working_time"] == 9.0
    best = sample["scores"]["best_score"]
    assert best["value"] == 0.9 and best["explanation"].startswith("best of 2 scored")
