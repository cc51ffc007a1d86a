"""Every model budget is checked by one rule (`runstate.budget.model_budget_spent`): for
the same limits and the same spend, a lab's run and campaign, the review, the reviewer
evaluation and the inspector reach the same verdict for the same reason. A limit that
known costs reach is reached, whatever the calls of unknown cost cost; a dollar limit
that known costs leave room in cannot be kept once a cost is unknown."""

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Literal, cast

import pytest

from events import Event, EventStore
from events.ids import new_id
from events.payloads import (
    Budget,
    BudgetExceeded,
    CampaignStarted,
    InspectionConfig,
    ModelResponded,
    Payload,
    ReviewConfig,
    ReviewRequested,
    RunFinished,
    RunStarted,
    Usage,
)
from events.spend import NOTHING, Spend, spend_of_payload
from runstate import fold
from workers.bus.local import LocalBus
from workers.context import WorkerContext
from workers.inspect.run import Budget as InspectorBudget
from workers.lab.budget import campaign_budget, over_model_budget
from workers.llm import Gateway
from workers.review.eval_run import EvalRun
from workers.review.steps import Review, _over_budget

T0 = datetime(2026, 2, 1, tzinfo=UTC)
Verdict = Literal["tokens", "dollars", "unknown"] | None
Whose = Literal["own", "campaign"]


def answer(cost: float | None) -> ModelResponded:
    """One answer of 60 tokens, at `cost` (None: unknown)."""
    return ModelResponded(
        call_id=new_id().hex,
        model="m",
        usage=Usage(input_tokens=50, output_tokens=10),
        latency_s=0.1,
        price=None,
        cost_usd=cost,
        cost_known=cost is not None,
    )


def events(stream: str, payloads: list[Payload]) -> list[Event]:
    return [
        Event(
            id=new_id(),
            stream=stream,
            version=v,
            occurred_at=T0 + timedelta(seconds=v),
            payload=p,
            correlation_id="c",
        )
        for v, p in enumerate(payloads)
    ]


CASES: list[tuple[str, int | None, float | None, list[float | None], Verdict]] = [
    ("dollars reached beside an unknown cost", None, 0.01, [0.02, None], "dollars"),
    ("tokens reached beside an unknown cost", 100, 1.0, [0.02, None], "tokens"),
    ("room left, but a cost unknown", None, 1.0, [0.02, None], "unknown"),
    ("an unknown cost and no dollar limit", 1000, None, [None], None),
    ("room left", 1000, 1.0, [0.02], None),
]


def lab(store: EventStore, whose: Whose, limits: Budget, spent: list[Payload]) -> Verdict:
    ctx = WorkerContext(store=store, bus=LocalBus())
    own = limits if whose == "own" else Budget()
    payloads = [RunStarted(task="t", lab="a", policy="llm", budget=own)]
    state = fold(events("run-a", payloads + (spent if whose == "own" else [])))
    campaign = campaign_budget(ctx.streams, ctx.spend, "c", "run-a")
    ended = over_model_budget(state, state, campaign, unpriced_model=None)
    if ended is None:
        return None
    if isinstance(ended[0], BudgetExceeded):
        return ended[0].budget  # type: ignore[return-value]
    assert isinstance(ended[0], RunFinished) and ended[0].reason == "error"
    return "unknown"


def said(reason: str | None) -> Verdict:
    """The verdict a reviewer's or the inspector's reason says."""
    if reason is None:
        return None
    if "token budget reached" in reason:
        return "tokens"
    if "dollar budget reached" in reason:
        return "dollars"
    assert "unknown cost" in reason, reason
    return "unknown"


def review(store: EventStore, whose: Whose, limits: Budget, spent: list[Payload]) -> Verdict:
    own = {"tokens": limits.tokens, "dollars": limits.dollars} if whose == "own" else {}
    config = ReviewConfig(reviewer="llm", model="m", **own)
    requested = ReviewRequested(paper_id="p", run="run-a", version=1, config=config)
    stream = events("review-p", [requested, *(spent if whose == "own" else [])])
    store.append(stream)
    ctx = WorkerContext(store=store, bus=LocalBus())
    return said(_over_budget(ctx, Review("review-p", stream, requested)))


def total(spent: list[Payload]) -> Spend:
    return sum((spend_of_payload(p) or NOTHING for p in spent), NOTHING)


@pytest.mark.parametrize("whose", ["own", "campaign"])
@pytest.mark.parametrize(("case", "tokens", "dollars", "costs", "verdict"), CASES)
def test_the_lab_and_the_review_check_a_model_budget_alike(
    sqlite_url: str,
    whose: Whose,
    case: str,
    tokens: int | None,
    dollars: float | None,
    costs: list[float | None],
    verdict: Verdict,
) -> None:
    store = EventStore.from_url(sqlite_url)
    limits = Budget(tokens=tokens, dollars=dollars)
    on_campaign = limits if whose == "campaign" else Budget()
    store.append(
        events(
            "campaign-c", [CampaignStarted(task="t", labs=1, mode="isolated", budget=on_campaign)]
        )
    )
    spent: list[Payload] = [answer(cost) for cost in costs]
    if whose == "campaign":  # another run of the campaign spent it
        store.append(events("run-b", [RunStarted(task="t", lab="b", policy="llm"), *spent]))
    assert lab(store, whose, limits, spent) == verdict, case
    assert review(store, whose, limits, spent) == verdict, case


@pytest.mark.parametrize(("case", "tokens", "dollars", "costs", "verdict"), CASES)
def test_the_inspector_and_the_reviewer_evaluation_check_it_as_the_lab_does(
    tmp_path: Path,
    sqlite_url: str,
    case: str,
    tokens: int | None,
    dollars: float | None,
    costs: list[float | None],
    verdict: Verdict,
) -> None:
    store = EventStore.from_url(sqlite_url)
    spent: list[Payload] = [answer(cost) for cost in costs]
    assert lab(store, "own", Budget(tokens=tokens, dollars=dollars), spent) == verdict, case
    inspector = InspectionConfig(model="m", tokens=tokens, dollars=dollars)
    assert said(InspectorBudget(inspector, total(spent)).over()) == verdict, case
    evaluation = EvalRun(
        stream="revieweval-x",
        gateway=cast(Gateway, None),  # no call is made: only the budget is checked
        store=store,
        inflight=tmp_path,
        record=lambda written: None,
        config=ReviewConfig(reviewer="llm", model="m", tokens=tokens, dollars=dollars),
        spent=total(spent),
    )
    assert said(evaluation._over_budget()) == verdict, case
