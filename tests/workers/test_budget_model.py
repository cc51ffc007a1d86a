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
    Price,
    ReviewConfig,
    ReviewRequested,
    RunFinished,
    RunStarted,
    Usage,
)
from events.spend import NOTHING, Spend, spend_of_payload
from runstate import fold
from runstate.budget import ModelBudget, model_budget_spent
from workers.bus.local import LocalBus
from workers.context import WorkerContext
from workers.inspect.run import Budget as InspectorBudget
from workers.lab.budget import campaign_budget, over_model_budget
from workers.lab.services import LabServices
from workers.llm import Gateway
from workers.llm.prices import PriceEntry, PriceTable
from workers.review.eval_run import EvalRun
from workers.review.steps import Review, _over_budget
from workers.tools.env import Archive

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


ONE_DOLLAR = {"input_per_mtok": 1, "cached_input_per_mtok": 1, "output_per_mtok": 1, "source": "t"}
PRICED = Gateway(
    "http://127.0.0.1:9/v1",
    None,
    PriceTable(
        (
            PriceEntry(
                "m",
                None,
                Price(input_per_mtok=1, cached_input_per_mtok=1, output_per_mtok=1, source="test"),
            ),
        )
    ),
)
"""A gateway whose table prices the model `m`: the cases' unknown costs are answers'."""


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
        gateway=PRICED,  # no call is made: only the budget is checked
        store=store,
        inflight=tmp_path,
        record=lambda written: None,
        config=ReviewConfig(reviewer="llm", model="m", tokens=tokens, dollars=dollars),
        spent=total(spent),
    )
    assert said(evaluation._over_budget()) == verdict, case


def test_a_dollar_limit_on_a_model_with_no_price_is_refused_alike(
    tmp_path: Path, sqlite_url: str
) -> None:
    """A dollar limit cannot be kept on a model the price table has no price for: the
    lab ends its run before the first call, and the review, the reviewer evaluation and
    the inspector make no call either (one call of unknown cost would already be one
    past what the limit can say)."""
    store = EventStore.from_url(sqlite_url)
    prices = PriceTable.load(builtin=None)  # no model has a price
    gateway = Gateway("http://127.0.0.1:9/v1", None, prices)
    limits = Budget(dollars=1.0)
    state = fold(events("run-a", [RunStarted(task="t", lab="a", policy="llm", budget=limits)]))
    ended = over_model_budget(state, state, None, unpriced_model="m")
    assert ended is not None and isinstance(ended[0], RunFinished), "the lab refuses"
    assert "m: it has no price" in (ended[0].detail or "")

    config = ReviewConfig(reviewer="llm", model="m", dollars=1.0)
    requested = ReviewRequested(paper_id="p", run="run-a", version=1, config=config)
    stream = events("review-p", [requested])
    store.append(stream)
    labs = LabServices(
        workspaces=tmp_path, gym_dirs=[], archive=cast(Archive, None), gateways=lambda _: gateway
    )
    ctx = WorkerContext(store=store, bus=LocalBus(), labs=labs)
    reason = _over_budget(ctx, Review("review-p", stream, requested))
    assert reason == "reviewer dollar budget cannot be kept for m: it has no price"

    evaluation = EvalRun(
        stream="revieweval-x",
        gateway=gateway,
        store=store,
        inflight=tmp_path,
        record=lambda written: None,
        config=config,
    )
    assert evaluation._over_budget() == reason

    inspector = InspectionConfig(model="m", dollars=1.0)
    said_by_inspector = InspectorBudget(inspector, unpriced=True).over()
    assert said_by_inspector == "inspector dollar budget cannot be kept for m: it has no price"

    # Without a dollar limit a model with no price is no reason to stop (tokens count).
    tokens_only = ReviewConfig(reviewer="llm", model="m", tokens=1000)
    asked = ReviewRequested(paper_id="q", run="run-a", version=1, config=tokens_only)
    other = events("review-q", [asked])
    store.append(other)
    assert _over_budget(ctx, Review("review-q", other, asked)) is None
    assert InspectorBudget(InspectionConfig(model="m", tokens=1000), unpriced=True).over() is None
    assert model_budget_spent(ModelBudget("reviewer", 1000, None, NOTHING), unpriced="m") is None
