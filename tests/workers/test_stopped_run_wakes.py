"""A run stopped (`run.interrupted`) while it waited for its paper's reviews is woken by
the paper's decision, as a run that was never stopped is. The step that resumes such a
run records nothing (it still waits: `workers.lab.reviews.WAIT`), so its last event
stays the stop; a decision recorded after the stop comes from a process that works
again (embedded: the resumed one). Without the wake-up the run waits for the reaper."""

from datetime import UTC, datetime, timedelta
from uuid import uuid4

import pytest

from events import Event, EventStore
from events.ids import new_id
from events.payloads import PaperDecided, Payload, ReviewAwaited, RunStarted
from tests.sent_bus import Sent
from workers.lab import interrupt
from workers.lab.step import LAB_STEP_TASK
from workers.review.reactions import schedule_reviews

T0 = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)
RUN, PAPER = "run-c1-0", "p1"


def _append(store: EventStore, stream: str, at: datetime, payload: Payload) -> None:
    version = store.stream_version(stream) + 1
    event = Event(
        id=new_id(),
        stream=stream,
        version=version,
        occurred_at=at,
        correlation_id="c1",
        payload=payload,
    )
    store.append([event])


def test_a_decision_wakes_a_run_stopped_while_it_awaited_it(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = EventStore.from_url(sqlite_url)
    started = RunStarted(task="t", lab="lab-0", policy="search", review_rounds=1)
    _append(store, RUN, T0, started)
    _append(store, RUN, T0 + timedelta(minutes=1), ReviewAwaited(paper_id=PAPER))
    monkeypatch.setattr(interrupt, "utcnow", lambda: T0 + timedelta(minutes=2))
    assert interrupt.record_interrupted(store, "c1", [RUN], "Ctrl-C in labrxiv campaign")
    decided = PaperDecided(
        paper_id=PAPER,
        decision="accept",
        reason="mean 7",
        reviews=[uuid4()],
        mean_rating=7.0,
        run=RUN,
    )
    _append(store, f"review-{PAPER}", T0 + timedelta(hours=9), decided)
    (recorded,) = store.read_records(types=["paper.decided"])
    bus = Sent()

    schedule_reviews(store, bus, [recorded])

    stopped_at = store.stream_version(RUN)
    assert (LAB_STEP_TASK, (RUN, stopped_at)) in bus
