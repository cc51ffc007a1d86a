"""A run's model usage as the exports show it: summed from the ledger's rows by the one
counting rule (`events.spend`), a call of unknown cost counted apart, never a silent $0;
and the Inspect eval's results, whose best score is ranked in its direction."""

from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

from events.spend import spend_of
from projections.exports.inspect_log import header_of
from projections.exports.inspect_sample import inspect_usage, unknown_costs
from projections.exports.runs import usage_of


def row(cost: float | None, kind: str = "model", **more: Any) -> dict[str, Any]:
    """A ledger row of an answered call (a grading, with `kind="grader"`) of model `m`."""
    return {
        "kind": kind,
        "status": "responded" if kind == "model" else "returned",
        "model": "m",
        "grader_calls": 2 if kind == "grader" else None,
        "input_tokens": 10,
        "cached_input_tokens": 4,
        "output_tokens": 10,
        "reasoning_tokens": 3,
        "total_tokens": 20,
        "cost_known": cost is not None,
        "cost_usd": cost,
    } | more


T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


def answered(cost: float | None) -> dict[str, Any]:
    """The `model.responded` payload the ledger row `row(cost)` was folded from."""
    usage = {"input_tokens": 10, "cached_input_tokens": 4, "output_tokens": 10}
    return {
        "usage": usage | {"reasoning_tokens": 3},
        "cost_usd": cost,
        "cost_known": cost is not None,
    }


def test_a_call_of_unknown_cost_is_counted_apart_not_a_silent_zero() -> None:
    used = usage_of([row(0.5), row(None)])["m"]
    spent = spend_of("model.responded", answered(0.5))
    unknown = spend_of("model.responded", answered(None))
    assert spent is not None and unknown is not None
    assert used.spend == spent + unknown
    assert (used.calls, used.unknown_cost, used.cost_usd) == (2, 1, 0.5)
    shown = inspect_usage({"m": used})["m"]
    assert (shown["total_tokens"], shown["total_cost"]) == (40, 0.5)
    assert unknown_costs({"m": used}) == {"m": 1}


def test_with_no_known_cost_the_total_is_null_and_gradings_count_their_calls() -> None:
    used = usage_of([row(None), row(None, kind="grader"), row(None, status="failed")])["m"]
    assert (used.calls, used.unknown_cost, used.cost_usd) == (3, 2, None)
    assert used.spend.unknown_cost_gradings == 1
    assert inspect_usage({"m": used})["m"]["total_cost"] is None
    assert unknown_costs(usage_of([row(0.25)])) == {}


def run_of(stream: str, best: float | None, direction: str | None, usage: Any = None) -> Any:
    """An exported run with only what the eval's header reads."""
    view = SimpleNamespace(
        stream=stream,
        best_score=best,
        best_direction=direction,
        first_event_at=T0,
        last_event_at=T0,
        task="t",
        policy="search",
        finished=True,
    )
    return SimpleNamespace(view=view, verdict=None, usage=usage or {})


def test_the_eval_header_shows_the_best_score_in_its_direction_and_unknown_costs() -> None:
    """Runs that minimize a raw score (an error): the best of 3.0 and 2.0 is 2.0."""
    runs = [
        run_of("run-a", 3.0, "minimize", usage_of([row(None)])),
        run_of("run-b", 2.0, "minimize"),
    ]
    header = header_of("c", runs)
    (best,) = header["results"]["scores"]
    assert best["metrics"]["min"]["value"] == 2.0 and "max" not in best["metrics"]
    assert best["metrics"]["mean"]["value"] == 2.5
    assert header["eval"]["metadata"]["unknown_cost_calls"] == {"m": 1}
    maximized = header_of("c", [run_of("run-a", 0.3, "maximize"), run_of("run-b", 0.7, None)])
    assert maximized["results"]["scores"][0]["metrics"]["max"]["value"] == 0.7
