"""Token and dollar budgets count what gradings cost when a task's grader calls a model
(math-prompting), for the run and for its campaign; an unpriced grading is unknown cost."""

from datetime import UTC, datetime, timedelta
from typing import Any

from events import Event, EventStore
from events.ids import new_id
from events.payloads import Budget, CampaignStarted, ExperimentScored, Payload, RunStarted
from runstate import fold
from workers.lab.budget import campaign_budget
from workers.lab.llm.campaign_spend import CampaignSpend
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
