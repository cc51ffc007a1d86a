"""An Inspect log of a run that stood stopped (`run.interrupted`, resumed the next
morning) counts its events' working time as the sample's `working_time` does
(`runstate.budget.wall_seconds`): the night is no working time of either."""

from datetime import UTC, datetime, timedelta

from events import Event
from events.ids import new_id
from events.payloads import Payload, RunInterrupted, RunStarted, ToolInvoked
from projections.exports.inspect_events import MessagePool, transcript

T0 = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)
STOP = T0 + timedelta(minutes=10)
MORNING = STOP + timedelta(hours=14)
RUN = "run-c1-0"


def _events(timed: list[tuple[datetime, Payload]]) -> list[Event]:
    return [
        Event(id=new_id(), stream=RUN, version=v, occurred_at=at, correlation_id="c1", payload=p)
        for v, (at, p) in enumerate(timed)
    ]


def test_an_event_after_a_stop_starts_at_the_working_time_before_it() -> None:
    started = RunStarted(task="t", lab="lab-0", policy="search")
    events = _events(
        [
            (T0, started),
            (T0 + timedelta(minutes=5), ToolInvoked(call_id="a", tool="bash", args={})),
            (STOP, RunInterrupted(detail="Ctrl-C in labrxiv campaign")),
            (MORNING, ToolInvoked(call_id="b", tool="bash", args={})),
        ]
    )

    found = transcript(events, [], MessagePool(), lambda _sha: None)

    after = next(item for item in found if item.get("id") == "b")
    assert after["working_start"] == 10 * 60.0
