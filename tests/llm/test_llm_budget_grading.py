"""Token and dollar budgets count what gradings cost when a task's grader calls a model
(math-prompting), for the run and for its campaign; an unpriced grading is unknown cost."""

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from events import Event, EventStore
from events.ids import new_id
from events.payloads import (
    Budget,
    CampaignStarted,
    ExperimentScored,
    ModelResponded,
    Payload,
    RunStarted,
    Usage,
)
from events.recorded import Recorded
from runstate import fold
from workers.lab.budget import campaign_budget, over_model_budget
from workers.lab.campaign_spend import CampaignFold, CampaignSpend
from workers.stream_cache import StreamCache

T0 = datetime(2026, 2, 1, tzinfo=UTC)
USAGE = {"calls": 40, "input_tokens": 3000, "cached_input_tokens": 0, "output_tokens": 500}


def graded(attempt: int, cost: float | None) -> ExperimentScored:
    return ExperimentScored(
        attempt=attempt,
        subtask_scores={"accuracy": 0.5},
        score=0.5,
        grader_usage=USAGE,
        grader_model="grader-model",
        grader_cost_usd=cost,
    )


def events(stream: str, payloads: list[Payload], campaign: str) -> list[Event]:
    return [
        Event(
            id=new_id(),
            stream=stream,
            version=v,
            occurred_at=T0 + timedelta(seconds=v),
            payload=p,
            correlation_id=campaign,
        )
        for v, p in enumerate(payloads)
    ]


def test_a_runs_budget_counts_its_gradings() -> None:
    run = [RunStarted(task="math-prompting", lab="a", policy="llm"), graded(1, 0.02)]
    spend = fold(events("run-a", [*run, graded(2, None)], "c")).spend
    assert spend.tokens == 2 * 3500
    assert spend.dollars == 0.02
    assert spend.unknown_cost == spend.unknown_cost_gradings == 1
    plain = ExperimentScored(attempt=3, subtask_scores={"accuracy": 0.5}, score=0.5)
    spent = fold(events("run-a", [*run, plain], "c")).spend
    assert spent.tokens == 3500, "a grading without a model costs none"


def test_a_campaigns_budget_counts_every_runs_gradings(sqlite_url: str) -> None:
    store = EventStore.from_url(sqlite_url)
    started = CampaignStarted(
        task="math-prompting", labs=2, mode="isolated", budget=Budget(tokens=10_000)
    )
    store.append(events("campaign-c", [started], "c"))
    for lab in ("a", "b"):
        run = [RunStarted(task="math-prompting", lab=lab, policy="llm"), graded(1, 0.01)]
        store.append(events(f"run-{lab}", run, "c"))
    store.append(events("run-other", [graded(1, 5.0)], "another-campaign"))
    spend = CampaignSpend(store)
    found = campaign_budget(StreamCache(store), spend, "c", "run-a")
    assert found is not None
    assert found.budget.tokens == 10_000
    assert (found.used.tokens, round(found.used.dollars, 9)) == (2 * 3500, 0.02)
    later = [graded(2, 0.03)]
    store.append([e.model_copy(update={"version": 2}) for e in events("run-b", later, "c")])
    reads: list[int] = []
    iter_records = store.iter_records

    def spy(after: int = 0, *args: Any, **kwargs: Any) -> Any:
        reads.append(after)
        return iter_records(after, *args, **kwargs)

    store.iter_records = spy  # type: ignore[method-assign]
    again = campaign_budget(StreamCache(store), spend, "c", "run-a")
    assert again is not None
    assert (again.used.tokens, round(again.used.dollars, 9)) == (3 * 3500, 0.05)
    assert reads and reads[0] > 0, "the fold reads on from where it stopped, not from 0"


def test_a_campaign_dollars_budget_is_not_kept_with_an_unknown_cost(sqlite_url: str) -> None:
    """Another run's grading of unknown cost is not $0 to the campaign's dollars budget:
    the next call of any run of the campaign ends it with a reason."""
    store = EventStore.from_url(sqlite_url)
    started = CampaignStarted(
        task="math-prompting", labs=2, mode="isolated", budget=Budget(dollars=1.0)
    )
    store.append(events("campaign-c", [started], "c"))
    mine = [RunStarted(task="math-prompting", lab="a", policy="llm")]
    store.append(events("run-a", mine, "c"))
    other = [RunStarted(task="math-prompting", lab="b", policy="llm"), graded(1, None)]
    store.append(events("run-b", other, "c"))
    found = campaign_budget(StreamCache(store), CampaignSpend(store), "c", "run-a")
    assert found is not None and found.used.unknown_cost == 1
    assert found.used.dollars == 0.0 and found.used.tokens == 3500
    state = fold(events("run-a", mine, "c"))
    ended = over_model_budget(state, state, found, unpriced_model=None)
    assert ended is not None
    (finished,) = ended
    assert finished.reason == "error"
    assert "campaign's dollars budget cannot be kept: 1 of its calls" in finished.detail
    without_limit = replace(found, budget=Budget(tokens=10_000))
    assert over_model_budget(state, state, without_limit, unpriced_model=None) is None


def test_a_call_in_flight_is_estimated_in_tokens_and_dollars_only() -> None:
    fold_ = CampaignFold()
    unpriced = ModelResponded(
        call_id="x",
        model="m",
        usage=Usage(input_tokens=10, output_tokens=5),
        latency_s=0.1,
        price=None,
        cost_usd=None,
        cost_known=False,
    )
    for position, (stream, type_, payload) in enumerate(
        [
            ("run-b", "model.called", {}),
            ("run-b", "model.responded", unpriced.model_dump(mode="json")),
            ("run-b", "model.called", {}),
        ],
        start=1,
    ):
        fold_.add(
            Recorded(position, new_id(), stream, 0, type_, 1, T0, T0, None, "c", "b", payload)
        )
    used = fold_.used("run-a")
    assert (used.tokens, used.unknown_cost) == (30, 1), "the estimate is not a second unknown"
