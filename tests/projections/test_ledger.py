"""The ledger read model: a row per call, paired across pages, and its roll-ups.

Durations are binary fractions so sums are exact on SQLite and PostgreSQL alike.
"""

from collections.abc import Iterator
from typing import Any

import pytest
from handmade_log import RunLog, at, build, interleave, rows, snapshot
from sqlalchemy import insert

from events import Event
from events.payloads import ModelCalled, ModelFailed, ModelResponded, Price, Usage
from projections.ledger import LEDGER, LedgerProjector, LedgerTotals, ledger_calls, ledger_totals
from projections.runner import ProjectionRunner


def ledger_log() -> list[Event]:
    """Run a (lab-a, c1): 3 calls, one never returned; run b (lab-b, c1): 2 calls;
    run c (lab-a again, c2): 1 call; run d (no campaign): 1 call."""
    a = RunLog("a", "lab-a", campaign="c1")
    b = RunLog("b", "lab-b", campaign="c1")
    c = RunLog("c", "lab-a", campaign="c2")
    d = RunLog("d", "lab-d")
    for run in (a, b, c, d):
        run.start(0)
    a.tool("call-1", "python", 1, 2.5)
    a.tool("call-2", "bash", 5, 0.5, exit_code=2)
    a.invoke("call-3", "evaluate", 10)
    b.tool("call-1", "python", 2, 4.0)
    b.tool("call-2", "read_file", 7, 0.25)
    c.tool("call-1", "python", 1, 1.0)
    d.tool("call-1", "bash", 1, 0.125)
    return interleave(a, b, c, d)


@pytest.fixture(params=[1, None], ids=["page-by-page", "at-once"])
def ledger(store_url: str, request: pytest.FixtureRequest) -> Iterator[ProjectionRunner]:
    runner = build(store_url, ledger_log(), step=request.param)
    yield runner
    runner.store.engine.dispose()


def test_one_row_per_call_with_its_return(ledger: ProjectionRunner) -> None:
    keys = ("run", "call_id", "kind", "lab", "campaign", "tool", "status", "exit_code")
    found = [(*(r[k] for k in keys), r["duration_s"]) for r in rows(ledger.store, LEDGER)]
    assert found == [
        ("run-a", "call-1", "tool", "lab-a", "c1", "python", "returned", 0, 2.5),
        ("run-a", "call-2", "tool", "lab-a", "c1", "bash", "returned", 2, 0.5),
        ("run-a", "call-3", "tool", "lab-a", "c1", "evaluate", "invoked", None, None),
        ("run-b", "call-1", "tool", "lab-b", "c1", "python", "returned", 0, 4.0),
        ("run-b", "call-2", "tool", "lab-b", "c1", "read_file", "returned", 0, 0.25),
        ("run-c", "call-1", "tool", "lab-a", "c2", "python", "returned", 0, 1.0),
        ("run-d", "call-1", "tool", "lab-d", None, "bash", "returned", 0, 0.125),
    ]
    with ledger.store.engine.connect() as conn:
        calls = ledger_calls(conn, run="run-a")
    assert [c["call_id"] for c in calls] == ["call-1", "call-2", "call-3"]
    assert (calls[0]["invoked_at"], calls[0]["returned_at"]) == (at(1), at(3.5))
    assert calls[2]["returned_at"] is None
    # No model call yet: the model columns are there, empty.
    assert all(c["model"] is None and c["total_tokens"] is None for c in calls)


def totals(runner: ProjectionRunner, **kwargs: Any) -> list[tuple[str | None, int, float]]:
    with runner.store.engine.connect() as conn:
        return [(t.key, t.calls, t.compute_seconds) for t in ledger_totals(conn, **kwargs)]


def test_roll_ups_per_run_lab_and_campaign(ledger: ProjectionRunner) -> None:
    assert totals(ledger, by="run") == [
        ("run-a", 3, 3.0),
        ("run-b", 2, 4.25),
        ("run-c", 1, 1.0),
        ("run-d", 1, 0.125),
    ]
    assert totals(ledger, by="lab") == [("lab-a", 4, 4.0), ("lab-b", 2, 4.25), ("lab-d", 1, 0.125)]
    assert totals(ledger, by="campaign") == [("c1", 5, 7.25), ("c2", 1, 1.0), (None, 1, 0.125)]
    assert totals(ledger, by="lab", campaign="c1") == [("lab-a", 3, 3.0), ("lab-b", 2, 4.25)]
    assert totals(ledger, by="run", campaign="nothing") == []


def test_model_calls_count_tokens_and_keep_unknown_cost_apart(ledger: ProjectionRunner) -> None:
    """Model events arrive later; the roll-up already sums their columns (rows put by hand)."""
    base = {c.name: None for c in LEDGER.c} | {"lab": "lab-m", "campaign": "cm", "run": "run-m"}
    priced = base | {
        "call_id": "m-1",
        "kind": "model",
        "status": "returned",
        "position": 1001,
        "model": "some-model",
        "input_tokens": 1000,
        "cached_input_tokens": 200,
        "output_tokens": 300,
        "reasoning_tokens": 100,
        "total_tokens": 1300,
        "cost_usd": 0.5,
        "cost_known": True,
    }
    unpriced = base | {
        "call_id": "m-2",
        "kind": "model",
        "status": "returned",
        "position": 1002,
        "model": "local-model",
        "input_tokens": 10,
        "output_tokens": 5,
        "total_tokens": 15,
        "cost_known": False,
    }
    tool = base | {"call_id": "t-1", "kind": "tool", "status": "returned", "position": 1003}
    tool |= {"tool": "bash", "duration_s": 1.5, "exit_code": 0}
    grading = base | {"call_id": "grader/1", "kind": "grader", "status": "responded"}
    grading |= {"position": 1004, "model": "grader-model", "grader_calls": 40}
    grading |= {"input_tokens": 4000, "output_tokens": 800, "total_tokens": 4800}
    grading |= {"cost_usd": 0.25, "cost_known": True}
    unpriced_grading = grading | {"call_id": "grader/2", "position": 1005}
    unpriced_grading |= {"cost_usd": None, "cost_known": False, "grader_calls": 2}
    with ledger.store.engine.begin() as conn:
        conn.execute(insert(LEDGER), [priced, unpriced, tool, grading, unpriced_grading])
    with ledger.store.engine.connect() as conn:
        (found,) = ledger_totals(conn, by="campaign", campaign="cm")
    assert found == LedgerTotals(
        key="cm",
        calls=5,
        tool_calls=1,
        model_calls=2,
        grader_calls=42,
        compute_seconds=1.5,
        input_tokens=9010,
        cached_input_tokens=200,
        output_tokens=1905,
        reasoning_tokens=100,
        tokens=10915,
        dollars=0.75,
        priced_calls=4,
        unknown_cost_calls=2,
        unknown_outcome_calls=0,
        failed_calls=0,
    )


def test_rebuild_equals_the_incremental_ledger(ledger: ProjectionRunner) -> None:
    tables = LedgerProjector().tables
    incremental = snapshot(ledger.store, tables)
    ledger.rebuild()
    assert snapshot(ledger.store, tables) == incremental


# -- model calls ---------------------------------------------------------------

PRICE = Price(
    input_per_mtok=2.0, cached_input_per_mtok=0.5, output_per_mtok=8.0, source="builtin:m"
)


def model_log() -> list[Event]:
    """Run m (lab-m, cm): r1 answered (priced, cached + reasoning tokens); r2 rate limited
    once, then answered with no price; r3 answered with no usage; r4 written ahead and
    never answered (the worker died). Run n (lab-n, cm): one tool call, one model call."""
    m = RunLog("m", "lab-m", campaign="cm")
    n = RunLog("n", "lab-n", campaign="cm")
    m.start(0)
    n.start(0)
    m.add(_called("r1", 1, "gpt-x"), 1)
    usage = Usage(
        input_tokens=1000, cached_input_tokens=400, output_tokens=300, reasoning_tokens=100
    )
    m.add(_responded("r1/1", "gpt-x-2026", usage, PRICE, 0.0038, 1.5), 2.5)
    m.add(_called("r2", 1, "local"), 3)
    m.add(
        ModelFailed(
            call_id="r2/1",
            error="rate_limited",
            status_code=429,
            retry_after_s=2.0,
            latency_s=0.25,
            will_retry=True,
        ),
        3.25,
    )
    m.add(_called("r2", 2, "local"), 5.25)
    m.add(_responded("r2/2", "local", Usage(input_tokens=10, output_tokens=5), None, None, 1.0), 6)
    m.add(_called("r3", 1, "gpt-x"), 7)
    m.add(_responded("r3/1", "gpt-x", None, PRICE, None, 0.5), 7.5)
    m.add(_called("r4", 1, "gpt-x"), 8)
    n.tool("call-1", "bash", 1, 0.5)
    n.add(_called("q1", 1, "gpt-x"), 2)
    n.add(
        _responded("q1/1", "gpt-x", Usage(input_tokens=100, output_tokens=50), PRICE, 0.0006, 2.0),
        4,
    )
    return interleave(m, n)


def _called(request_id: str, attempt: int, model: str) -> ModelCalled:
    return ModelCalled(
        call_id=f"{request_id}/{attempt}",
        request_id=request_id,
        attempt=attempt,
        model=model,
        provider="127.0.0.1:8000",
        phase="experiment",
        messages=3,
    )


def _responded(
    call_id: str,
    model: str,
    usage: Usage | None,
    price: Price | None,
    cost: float | None,
    latency: float,
) -> ModelResponded:
    return ModelResponded(
        call_id=call_id,
        model=model,
        usage=usage,
        latency_s=latency,
        price=price,
        cost_usd=cost,
        cost_known=cost is not None,
    )


@pytest.fixture(params=[1, None], ids=["page-by-page", "at-once"])
def model_ledger(store_url: str, request: pytest.FixtureRequest) -> Iterator[ProjectionRunner]:
    runner = build(store_url, model_log(), step=request.param)
    yield runner
    runner.store.engine.dispose()


def test_one_row_per_model_attempt_with_its_outcome(model_ledger: ProjectionRunner) -> None:
    keys = (
        "run", "call_id", "kind", "status", "model", "request_id", "attempt", "error",
        "input_tokens", "cached_input_tokens", "output_tokens", "reasoning_tokens",
        "total_tokens", "cost_usd", "cost_known", "latency_s",
    )  # fmt: skip
    found = [tuple(r[k] for k in keys) for r in rows(model_ledger.store, LEDGER)]
    assert found == [
        ("run-m", "r1/1", "model", "responded", "gpt-x-2026", "r1", 1, None,
         1000, 400, 300, 100, 1300, 0.0038, True, 1.5),
        ("run-m", "r2/1", "model", "failed", "local", "r2", 1, "rate_limited",
         None, None, None, None, None, None, None, 0.25),
        ("run-m", "r2/2", "model", "responded", "local", "r2", 2, None,
         10, 0, 5, 0, 15, None, False, 1.0),
        ("run-m", "r3/1", "model", "responded", "gpt-x", "r3", 1, None,
         None, None, None, None, None, None, False, 0.5),
        ("run-m", "r4/1", "model", "called", "gpt-x", "r4", 1, None,
         None, None, None, None, None, None, None, None),
        ("run-n", "call-1", "tool", "returned", None, None, None, None,
         None, None, None, None, None, None, None, None),
        ("run-n", "q1/1", "model", "responded", "gpt-x", "q1", 1, None,
         100, 0, 50, 0, 150, 0.0006, True, 2.0),
    ]  # fmt: skip
    with model_ledger.store.engine.connect() as conn:
        calls = ledger_calls(conn, run="run-m")
    assert [c["call_id"] for c in calls] == ["r1/1", "r2/1", "r2/2", "r3/1", "r4/1"]
    assert (calls[0]["invoked_at"], calls[0]["returned_at"]) == (at(1), at(2.5))
    assert calls[4]["returned_at"] is None
    assert {c["provider"] for c in calls} == {"127.0.0.1:8000"}
    assert {c["phase"] for c in calls} == {"experiment"}


def test_model_roll_ups_keep_unknown_outcome_and_unknown_cost_apart(
    model_ledger: ProjectionRunner,
) -> None:
    with model_ledger.store.engine.connect() as conn:
        per_run = ledger_totals(conn, by="run")
        (campaign,) = ledger_totals(conn, by="campaign")
    assert per_run[0] == LedgerTotals(
        key="run-m",
        calls=5,
        tool_calls=0,
        model_calls=5,
        grader_calls=0,
        compute_seconds=0.0,
        input_tokens=1010,
        cached_input_tokens=400,
        output_tokens=305,
        reasoning_tokens=100,
        tokens=1315,
        dollars=0.0038,
        priced_calls=3,
        unknown_cost_calls=2,
        unknown_outcome_calls=1,
        failed_calls=1,
    )
    assert (campaign.calls, campaign.tool_calls, campaign.model_calls) == (7, 1, 6)
    assert (campaign.tokens, campaign.compute_seconds) == (1465, 0.5)
    assert campaign.dollars == pytest.approx(0.0044, abs=1e-12)
    unknown = (campaign.unknown_cost_calls, campaign.unknown_outcome_calls, campaign.failed_calls)
    assert unknown == (2, 1, 1)


def test_rebuild_equals_the_incremental_model_ledger(model_ledger: ProjectionRunner) -> None:
    tables = LedgerProjector().tables
    incremental = snapshot(model_ledger.store, tables)
    model_ledger.rebuild()
    assert snapshot(model_ledger.store, tables) == incremental
