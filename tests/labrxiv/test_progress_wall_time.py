"""The live table's time and the campaign summary's seconds are wall time used, as the
runs' wall-time limits count it (`runstate.budget.wall_seconds`): a night a run stood
stopped (`run.interrupted` until `labrxiv resume`) is no time the campaign spent."""

from types import SimpleNamespace
from typing import cast

from events.payloads import RunInterrupted, RunResumed
from labrxiv.campaigns import progress_table
from labrxiv.report import summarize
from projections.runs import runs_of
from tests.projections.handmade_log import RunLog, build
from workers.gym.bundle import Bundle
from workers.gym.card import Subtask
from workers.lab.campaign import CampaignPlan

NIGHT = 36000.0
ACCURACY = Subtask(name="accuracy", metric="accuracy", direction="maximize", baseline=0.0, sota=1.0)


def _stopped(lab: int, late: float = 0.0) -> RunLog:
    """A run of campaign c1 that works 30 s from `late`, 10 of them before a night's stop."""
    run = RunLog(f"c1-{lab}", f"lab-{lab}", campaign="c1")
    run.start(late)
    run.tool("k", "evaluate", late + 1, 1)
    run.score(1, 0.5, 0.5, late + 5)
    run.add(RunInterrupted(detail="Ctrl-C in labrxiv campaign"), 10)
    run.add(RunResumed(), 10 + NIGHT)
    run.paper(f"p{lab}", 20 + NIGHT)
    run.finish(30 + NIGHT)
    return run


def test_the_live_tables_time_is_the_wall_time_used(sqlite_url: str) -> None:
    runner = build(sqlite_url, _stopped(0).events)
    with runner.store.engine.connect() as conn:
        views = runs_of(conn, campaign="c1")
    runner.store.engine.dispose()
    plan = CampaignPlan(task="continual-digits", labs=1, papers=1, mode="isolated", seed=1)
    table = progress_table(views, plan, "t")
    (time,) = next(column for column in table.columns if column.header == "time")._cells
    assert time == "30.0s"


def test_the_campaigns_seconds_are_the_wall_time_its_labs_used_side_by_side(
    sqlite_url: str,
) -> None:
    """Two labs, stopped together for the night, the second started 4 s after the first."""
    events = sorted([*_stopped(0).events, *_stopped(1, late=4).events], key=lambda e: e.occurred_at)
    runner = build(sqlite_url, events)
    card = SimpleNamespace(primary="accuracy", subtask=lambda _: ACCURACY)
    bundle = cast(Bundle, SimpleNamespace(card=card))
    summary = summarize(runner.store, "c1", "isolated", bundle)
    runner.store.engine.dispose()
    assert summary.seconds == 30.0
    assert summary.seconds_per_paper == 15.0
