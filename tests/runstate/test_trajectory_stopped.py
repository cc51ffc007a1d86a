"""A run's trajectory is cut into the steps the lab took (`runstate.trajectory`): a stop
(`run.interrupted`, written by the stopped process, not by a lab step) is no step of
its own, so a run stopped and resumed has the steps, and the numbers, it would have had
without the stop (`labrxiv replay`, `labrxiv fork --step`, the behaviour's step count)."""

from datetime import UTC, datetime, timedelta
from uuid import UUID

from events import Event
from events.ids import new_id
from events.payloads import (
    Payload,
    RunInterrupted,
    RunResumed,
    RunStarted,
    ToolInvoked,
    ToolReturned,
)
from runstate.trajectory import steps

T0 = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)
RUN = "run-c1-0"


def _event(version: int, at: datetime, payload: Payload, cause: UUID | None) -> Event:
    return Event(
        id=new_id(),
        stream=RUN,
        version=version,
        occurred_at=at,
        causation_id=cause,
        correlation_id="c1",
        payload=payload,
    )


def test_a_stop_is_no_step() -> None:
    returned = {"tool": "bash", "exit_code": 0, "duration_s": 0}
    start = _event(0, T0, RunStarted(task="t", lab="lab-0", policy="search"), None)
    a = _event(1, T0, ToolInvoked(call_id="a", tool="bash", args={}), start.id)
    a_done = _event(2, T0, ToolReturned(call_id="a", **returned), start.id)
    # As `workers.lab.interrupt` writes it, and the step that resumes the run.
    stop = _event(3, T0 + timedelta(minutes=1), RunInterrupted(), a_done.id)
    b = _event(4, T0 + timedelta(hours=9), ToolInvoked(call_id="b", tool="bash", args={}), stop.id)
    b_done = _event(5, T0 + timedelta(hours=9), ToolReturned(call_id="b", **returned), stop.id)

    taken = [step for step, _ in steps([start, a, a_done, stop, b, b_done])]

    assert [len(step.actions) for step in taken] == [0, 1, 1]


def test_a_steps_time_leaves_the_stop_out() -> None:
    """`Step.elapsed_s` is wall time used (`runstate.budget.wall_seconds`): the night a
    run stood stopped is not in the time of the steps after it, as in the curves."""
    returned = {"tool": "bash", "exit_code": 0, "duration_s": 0}
    start = _event(0, T0, RunStarted(task="t", lab="lab-0", policy="search"), None)
    a = _event(1, T0, ToolInvoked(call_id="a", tool="bash", args={}), start.id)
    a_done = _event(2, T0 + timedelta(seconds=30), ToolReturned(call_id="a", **returned), start.id)
    stop = _event(3, T0 + timedelta(minutes=1), RunInterrupted(), a_done.id)
    resumed = _event(4, T0 + timedelta(hours=9), RunResumed(), stop.id)
    b = _event(5, T0 + timedelta(hours=9), ToolInvoked(call_id="b", tool="bash", args={}), stop.id)
    b_done = _event(
        6, T0 + timedelta(hours=9, seconds=5), ToolReturned(call_id="b", **returned), stop.id
    )
    c = _event(
        7,
        T0 + timedelta(hours=9, seconds=20),
        ToolInvoked(call_id="c", tool="bash", args={}),
        b_done.id,
    )

    taken = [step for step, _ in steps([start, a, a_done, stop, resumed, b, b_done, c])]

    assert [step.elapsed_s for step in taken] == [0.0, 0.0, 60.0, 80.0]
