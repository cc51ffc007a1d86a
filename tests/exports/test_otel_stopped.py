"""A model call written ahead before a stop (`run.interrupted`) and sent by the step
that resumed the run the next morning: its `chat` span is the call, not the night the
run stood stopped between its writing ahead and its sending."""

from datetime import UTC, datetime, timedelta

from events import Event
from events.ids import new_id
from events.payloads import (
    ModelCalled,
    ModelResponded,
    Payload,
    RunFinished,
    RunInterrupted,
    RunStarted,
)
from projections.exports.otel_spans import run_spans

T0 = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)
STOP = T0 + timedelta(minutes=10)
MORNING = STOP + timedelta(hours=14)
RUN = "run-c1-0"


def test_a_call_sent_after_a_stop_spans_its_latency_not_the_night() -> None:
    called = ModelCalled(
        call_id=f"{RUN}:1/1",
        request_id=f"{RUN}:1",
        attempt=1,
        model="m",
        provider="p",
        messages=1,
    )
    answered = ModelResponded(
        call_id=called.call_id,
        model="m",
        usage=None,
        latency_s=2.0,
        price=None,
        cost_usd=None,
        cost_known=False,
    )
    timed: list[tuple[datetime, Payload]] = [
        (T0, RunStarted(task="t", lab="lab-0", policy="llm")),
        (T0 + timedelta(minutes=9), called),
        (STOP, RunInterrupted(detail="Ctrl-C in labrxiv campaign")),
        (MORNING + timedelta(seconds=2), answered),
        (MORNING + timedelta(seconds=3), RunFinished(reason="done")),
    ]
    events = [
        Event(
            id=new_id(),
            stream=RUN,
            version=v,
            occurred_at=at,
            correlation_id="c1",
            payload=p,
            position=v + 1,
        )
        for v, (at, p) in enumerate(timed)
    ]

    (chat,) = [span for span in run_spans(events) if span.kind == "client"]

    assert chat.end - chat.start == timedelta(seconds=2)
