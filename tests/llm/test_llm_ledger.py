"""End to end: gateway calls recorded ahead into the log, folded into the ledger, which
equals what the server reported, attempt by attempt (SQLite and PostgreSQL)."""

from collections.abc import Callable, Iterator
from decimal import Decimal
from typing import Any

import pytest
from fake_server import FakeServer, Scripted, completion, rate_limited, server_error, usage
from llm_support import Sleeps, call_until_done

from events import Event, EventStore
from events.ids import new_id, utcnow
from events.payloads import Payload, RunStarted
from projections.ledger import LedgerProjector, ledger_calls, ledger_totals
from projections.runner import ProjectionRunner
from workers.llm import Gateway, ModelRequest, PriceTable

RUN, LAB, CAMPAIGN = "run-llm-1", "lab-1", "campaign-1"

SCRIPT: list[tuple[str, list[Scripted]]] = [
    ("gpt-4o-mini", [completion("a", usage=usage(1200, 300, cached=1000, reasoning=120))]),
    ("gpt-4.1", [rate_limited(retry_after=1), completion("b", usage=usage(800, 200, 0, 0))]),
    ("gpt-4o", [completion("c", usage=None)]),
    ("local-llama", [completion("d", usage=usage(50, 10))]),
    ("gpt-4o", [server_error(), server_error(502), server_error(503)]),
]
"""Per logical request: the model asked for and what the server answers to each attempt."""


class LogRecorder:
    """Appends each event to the run's stream at once: what the lab loop's write-ahead needs."""

    def __init__(self, store: EventStore) -> None:
        self.store = store
        self.version = 0
        self.append(RunStarted(task="prompting", lab=LAB, policy="llm"), {})

    def append(self, payload: Payload, blobs: dict[str, bytes]) -> None:
        event = Event(
            id=new_id(),
            stream=RUN,
            version=self.version,
            occurred_at=utcnow(),
            correlation_id=CAMPAIGN,
            actor=LAB,
            payload=payload,
        )
        self.store.append([event], blobs)
        self.version += 1


@pytest.fixture
def store(store_url: str) -> Iterator[EventStore]:
    store = EventStore.from_url(store_url)
    yield store
    store.engine.dispose()


def expected_row(model: str, answer: Scripted, prices: PriceTable) -> dict[str, Any]:
    """The ledger row one attempt must give, from the server's own answer."""
    if answer.status != 200:
        return {"model": model, "status": "failed", "total_tokens": None, "cost_known": None}
    assert isinstance(answer.body, dict)
    reported = answer.body.get("usage")
    if reported is None:
        return {"model": model, "status": "responded", "total_tokens": None, "cost_known": False}
    cached = (reported.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
    reasoning = (reported.get("completion_tokens_details") or {}).get("reasoning_tokens") or 0
    row = {
        "model": model,
        "status": "responded",
        "input_tokens": reported["prompt_tokens"],
        "cached_input_tokens": cached,
        "output_tokens": reported["completion_tokens"],
        "reasoning_tokens": reasoning,
        "total_tokens": reported["total_tokens"],
    }
    price = prices.price_of(model)
    if price is None:
        return row | {"cost_known": False, "cost_usd": None}
    dollars = (
        (reported["prompt_tokens"] - cached) * Decimal(str(price.input_per_mtok))
        + cached * Decimal(str(price.cached_input_per_mtok))
        + reported["completion_tokens"] * Decimal(str(price.output_per_mtok))
    ) / 1_000_000
    return row | {"cost_known": True, "cost_usd": pytest.approx(float(dollars), abs=1e-12)}


def test_the_ledger_equals_what_the_server_reported_call_by_call(
    store: EventStore, server: FakeServer, make_gateway: Callable[..., Gateway], sleeps: Sleeps
) -> None:
    prices = PriceTable.load()
    gateway = make_gateway(max_attempts=3, prices=prices)
    log = LogRecorder(store)
    messages = [{"role": "user", "content": "go"}]
    for i, (model, answers) in enumerate(SCRIPT):
        server.queue(*answers)
        call_until_done(gateway, ModelRequest(f"{RUN}:{i}", model, messages), log.append, sleeps)
    # A call written ahead whose worker died before an answer: its outcome is unknown.
    unanswered = gateway.prepare(ModelRequest(f"{RUN}:{len(SCRIPT)}", "gpt-4o", messages))
    log.append(unanswered.called, unanswered.blobs)

    runner = ProjectionRunner(store, [LedgerProjector()])
    runner.catch_up()
    with store.engine.connect() as conn:
        calls = ledger_calls(conn, run=RUN)
        (totals,) = ledger_totals(conn, by="campaign", campaign=CAMPAIGN)

    expected = [expected_row(m, answer, prices) for m, answers in SCRIPT for answer in answers]
    expected.append({"model": "gpt-4o", "status": "called", "total_tokens": None})
    assert len(calls) == len(expected) == len(server.completions()) + 1
    for call, want in zip(calls, expected, strict=True):
        got = {key: call[key] for key in want}
        assert got == want, call["call_id"]
        assert call["kind"] == "model" and call["provider"] == gateway.provider
    assert [c["attempt"] for c in calls] == [1, 1, 2, 1, 1, 1, 2, 3, 1]
    assert [c["error"] for c in calls if c["status"] == "failed"] == [
        "rate_limited",
        "server_error",
        "server_error",
        "server_error",
    ]
    assert all(c["latency_s"] is not None for c in calls if c["status"] != "called")

    reported = [a.body["usage"] for _, answers in SCRIPT for a in answers if _usage(a)]
    assert totals.input_tokens == sum(u["prompt_tokens"] for u in reported)
    assert totals.output_tokens == sum(u["completion_tokens"] for u in reported)
    assert totals.tokens == sum(u["total_tokens"] for u in reported)
    assert totals.cached_input_tokens == 1000 and totals.reasoning_tokens == 120
    known = [c["cost_usd"] for c in calls if c["cost_known"]]
    assert totals.dollars == pytest.approx(sum(known), abs=1e-12) and len(known) == 2
    assert (totals.model_calls, totals.failed_calls) == (9, 4)
    assert (totals.unknown_cost_calls, totals.unknown_outcome_calls) == (2, 1)
    # Every request body the log references is in the blob table.
    assert (
        store.get_blob(unanswered.called.request.sha256)
        == unanswered.blobs[unanswered.called.request.sha256]
    )


def _usage(answer: Scripted) -> bool:
    return isinstance(answer.body, dict) and answer.body.get("usage") is not None
