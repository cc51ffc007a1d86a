"""The run fold is pure and incremental: one event at a time, in pages of any size, or
from a saved state plus the rest, it gives the same state, and folding on never changes
a state already folded (the step cache and `ahead` rely on that)."""

import itertools
import json
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from events import Event
from events.ids import new_id
from events.payloads import (
    Budget,
    ExperimentScored,
    LlmConfig,
    ModelCalled,
    ModelFailed,
    ModelResponded,
    PapersRetrieved,
    PaperSubmitted,
    Payload,
    PhaseEntered,
    RunFinished,
    RunInterrupted,
    RunResumed,
    RunStarted,
    ToolInvoked,
    ToolReturned,
    Usage,
)
from runstate import RunState, ahead, apply, fold, fold_from, start

T0 = datetime(2026, 3, 1, tzinfo=UTC)
STARTED = RunStarted(
    task="continual-digits",
    lab="lab-0",
    policy="llm",
    budget=Budget(attempts=50),
    llm=LlmConfig(model="m"),
)


def _payloads(n: int) -> st.SearchStrategy[Payload]:
    """Any event a run may record, `n` making ids and numbers vary."""
    call = f"call-{n % 7}"
    config = json.dumps({"lr": n % 5})
    return st.sampled_from(
        [
            ToolInvoked(
                call_id=call, tool="write_file", args={"path": "config.json", "content": config}
            ),
            ToolInvoked(call_id=call, tool="evaluate", args={}),
            ToolInvoked(call_id=call, tool="search_archive", args={"query": "q"}),
            ToolReturned(call_id=call, tool="evaluate", exit_code=0, duration_s=0.5, preview="ok"),
            ExperimentScored(attempt=1 + n % 4, subtask_scores={"a": n / 10}, score=n / 10),
            ExperimentScored(
                attempt=1 + n % 3,
                subtask_scores={"a": 0.5},
                score=0.5,
                grader_usage={"calls": 2, "input_tokens": 10 * n, "output_tokens": n},
                grader_cost_usd=None if n % 2 else 0.001 * n,
            ),
            PapersRetrieved(query="q", paper_ids=[f"p{n}"]),
            PaperSubmitted(
                paper_id=f"paper-{n}", task="continual-digits", title="t", abstract="a", body="b"
            ),
            PhaseEntered(phase=("plan", "experiment", "writeup")[n % 3]),
            ModelCalled(
                call_id=call,
                request_id=call,
                attempt=1 + n % 2,
                model="m",
                provider="p",
                messages=3,
            ),
            ModelResponded(
                call_id=call,
                model="m",
                usage=None if n % 5 == 0 else Usage(input_tokens=n, output_tokens=n // 2),
                latency_s=0.1,
                price=None,
                cost_usd=None if n % 3 == 0 else 0.0001 * n,
                cost_known=n % 3 != 0,
            ),
            ModelFailed(call_id=call, error="timeout", latency_s=1.0, will_retry=True),
            RunFinished(reason="done"),
            RunInterrupted(detail="Ctrl-C"),
            RunResumed(),
        ]
    )


@st.composite
def streams(draw: st.DrawFn) -> list[Event]:
    count = draw(st.integers(min_value=0, max_value=60))
    payloads = [draw(_payloads(draw(st.integers(0, 40)))) for _ in range(count)]
    return [
        Event(
            id=new_id(),
            stream="run-prop",
            version=v,
            occurred_at=T0 + timedelta(seconds=v),
            correlation_id="c",
            payload=p,
        )
        for v, p in enumerate([STARTED, *payloads])
    ]


def _one_at_a_time(events: list[Event]) -> RunState:
    state = start(events[0])
    for event in events[1:]:
        state = apply(state, event)
    return state


@settings(max_examples=150, deadline=None)
@given(events=streams(), pages=st.lists(st.integers(1, 10), min_size=1, max_size=20))
def test_any_paging_gives_the_same_state(events: list[Event], pages: list[int]) -> None:
    whole = fold(events)
    assert _one_at_a_time(events) == whole
    state, at, sizes = start(events[0]), 1, itertools.cycle(pages)
    while at < len(events):
        size = next(sizes)
        state = fold_from(state, events[at : at + size])
        at += size
    assert state == whole


@settings(max_examples=150, deadline=None)
@given(events=streams(), cut=st.integers(0, 60))
def test_a_saved_state_plus_the_rest_is_the_whole_and_stays_as_saved(
    events: list[Event], cut: int
) -> None:
    cut = min(cut, len(events) - 1)
    saved = fold(events[: cut + 1])
    copy_of_saved = fold(events[: cut + 1])
    assert fold_from(saved, events[cut + 1 :]) == fold(events)
    ahead(saved, [e.payload for e in events[cut + 1 :]], T0)
    assert saved == copy_of_saved, "folding on from a state never changes it"


@settings(max_examples=100, deadline=None)
@given(events=streams(), cut=st.integers(0, 60))
def test_ahead_folds_payloads_as_their_events_will_be_folded(events: list[Event], cut: int) -> None:
    cut = min(cut, len(events) - 1)
    saved = fold(events[: cut + 1])
    unrecorded = uuid.UUID(int=0)
    rest = [e.model_copy(update={"id": unrecorded, "occurred_at": T0}) for e in events[cut + 1 :]]
    assert ahead(saved, [e.payload for e in rest], T0) == fold_from(saved, rest)


def test_the_fold_counts_spend_by_the_one_rule() -> None:
    u = Usage(input_tokens=100, cached_input_tokens=40, output_tokens=30, reasoning_tokens=10)
    answered = ModelResponded(
        call_id="c", model="m", usage=u, latency_s=1, price=None, cost_usd=0.5, cost_known=True
    )
    unpriced = answered.model_copy(update={"cost_usd": None, "cost_known": False})
    events = [
        Event(id=new_id(), stream="run-s", version=v, occurred_at=T0, payload=p)
        for v, p in enumerate([STARTED, answered, unpriced])
    ]
    spend = fold(events).spend
    assert (spend.tokens, spend.cached_input_tokens, spend.reasoning_tokens) == (260, 80, 20)
    assert spend.dollars == 0.5 and spend.unknown_cost == 1 and spend.priced == 2


def test_an_event_out_of_order_is_refused() -> None:
    first = Event(id=new_id(), stream="run-s", version=0, occurred_at=T0, payload=STARTED)
    skipped = first.model_copy(update={"version": 2, "payload": RunFinished(reason="done")})
    with pytest.raises(ValueError, match="does not follow"):
        apply(start(first), skipped)


def test_a_stop_is_no_decision_and_its_time_is_summed_to_the_next_event() -> None:
    """A run stopped with a model call written ahead takes that call up when resumed: the
    `run.interrupted` leaves `last` as it was, and the time to the next event is the
    time it stood stopped."""
    called = ModelCalled(
        call_id="c", request_id="c", attempt=1, model="m", provider="p", messages=1
    )
    payloads = [STARTED, called, RunInterrupted(detail="Ctrl-C")]
    events = [
        Event(
            id=new_id(), stream="run-s", version=v, occurred_at=T0 + timedelta(minutes=v), payload=p
        )
        for v, p in enumerate(payloads)
    ]
    stopped = fold(events)
    assert stopped.last == called and stopped.stopped_at == T0 + timedelta(minutes=2)
    answer = ModelFailed(call_id="c", error="timeout", latency_s=1.0, will_retry=True)
    resumed = apply(
        stopped,
        Event(
            id=new_id(),
            stream="run-s",
            version=3,
            occurred_at=T0 + timedelta(hours=5),
            payload=answer,
        ),
    )
    assert resumed.stopped_at is None and resumed.last == answer
    assert resumed.stopped_s == (timedelta(hours=5) - timedelta(minutes=2)).total_seconds()


def test_a_stop_ends_at_its_resumed_which_leaves_the_decision_and_its_time() -> None:
    """`run.resumed` ends the stop (its length is added to `stopped_s`) and, like the
    `run.interrupted`, leaves `last` and when it was made as the stop found them."""
    called = ModelCalled(
        call_id="c", request_id="c", attempt=1, model="m", provider="p", messages=1
    )
    timed = [(STARTED, T0), (called, T0 + timedelta(minutes=1))]
    timed += [(RunInterrupted(detail="Ctrl-C"), T0 + timedelta(minutes=2))]
    timed += [(RunResumed(), T0 + timedelta(hours=5))]
    events = [
        Event(id=new_id(), stream="run-s", version=v, occurred_at=at, payload=p)
        for v, (p, at) in enumerate(timed)
    ]

    resumed = fold(events)

    assert resumed.stopped_at is None and resumed.last == called
    assert resumed.last_made_at == T0 + timedelta(minutes=1)
    assert resumed.stopped_s == (timedelta(hours=5) - timedelta(minutes=2)).total_seconds()
