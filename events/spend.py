"""The one rule that counts model usage and cost, beside the usage payload it reads.

Budgets (a run's and its campaign's), the ledger, the efficiency curves and the lab's
own view of what it used all count through this module, so they agree by
construction. What counts:
- a `model.responded`: its usage (input, cached input, output, reasoning tokens) and
  its cost at the price frozen in the event;
- an `experiment.scored` whose grader called a model (`grader_usage`): that grading's
  tokens and cost.
A cost that is unknown (no price, or an answer with no usage) adds nothing to the
dollars and is counted in `unknown_cost`: never a silent $0. Tokens a provider did not
report are not guessed. A call written ahead (`model.called`) with no outcome spends
nothing here: the ledger counts it apart as a call of unknown outcome.

Cached input tokens are part of the input tokens and reasoning tokens part of the
output tokens (OpenAI's `usage`), so `tokens` is input + output, with no double count.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from events.payloads.base import Payload
from events.payloads.experiment import ExperimentScored
from events.payloads.model import ModelResponded

SPENDING_TYPES = frozenset({"model.responded", "experiment.scored"})
"""The event types that can spend (an `experiment.scored` only when its grader used a model)."""


@dataclass(frozen=True)
class Spend:
    """Tokens and dollars, summed; an instance is one event's spend or a total of them."""

    input_tokens: int = 0
    cached_input_tokens: int = 0
    """Part of `input_tokens`."""
    output_tokens: int = 0
    reasoning_tokens: int = 0
    """Part of `output_tokens`."""
    dollars: float = 0.0
    """Known costs only."""
    priced: int = 0
    """Answers and model-using gradings counted (known cost or not)."""
    unknown_cost: int = 0
    """Of those, how many have an unknown cost (their dollars are in no total)."""
    unknown_cost_gradings: int = 0
    """Of those, how many are gradings (the task's grader called an unpriced model)."""

    @property
    def tokens(self) -> int:
        """The tokens a budget counts: input plus output."""
        return self.input_tokens + self.output_tokens

    def __add__(self, other: "Spend") -> "Spend":
        return Spend(
            input_tokens=self.input_tokens + other.input_tokens,
            cached_input_tokens=self.cached_input_tokens + other.cached_input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            reasoning_tokens=self.reasoning_tokens + other.reasoning_tokens,
            dollars=self.dollars + other.dollars,
            priced=self.priced + other.priced,
            unknown_cost=self.unknown_cost + other.unknown_cost,
            unknown_cost_gradings=self.unknown_cost_gradings + other.unknown_cost_gradings,
        )


NOTHING = Spend()
"""What an event that spends nothing adds."""


def spend_of(event_type: str, payload: Mapping[str, Any]) -> Spend | None:
    """What one stored event spent (payload as a dict, as the read side sees it); None
    for an event that cannot spend (any other type, or a grading that used no model)."""
    if event_type == "model.responded":
        cost = payload.get("cost_usd") if payload.get("cost_known", True) else None
        return _counted(payload.get("usage"), cost, grading=False)
    if event_type == "experiment.scored" and payload.get("grader_usage"):
        return _counted(payload["grader_usage"], payload.get("grader_cost_usd"), grading=True)
    return None


def spend_of_payload(payload: Payload) -> Spend | None:
    """`spend_of` for a typed payload (the write side's view)."""
    if isinstance(payload, ModelResponded):
        usage = None if payload.usage is None else payload.usage.model_dump()
        cost = payload.cost_usd if payload.cost_known else None
        return _counted(usage, cost, grading=False)
    if isinstance(payload, ExperimentScored) and payload.grader_usage:
        return _counted(payload.grader_usage, payload.grader_cost_usd, grading=True)
    return None


def _counted(usage: Mapping[str, Any] | None, cost: float | None, grading: bool) -> Spend:
    usage = usage or {}
    unknown = cost is None
    return Spend(
        input_tokens=int(usage.get("input_tokens", 0)),
        cached_input_tokens=int(usage.get("cached_input_tokens", 0)),
        output_tokens=int(usage.get("output_tokens", 0)),
        reasoning_tokens=int(usage.get("reasoning_tokens", 0)),
        dollars=0.0 if cost is None else float(cost),
        priced=1,
        unknown_cost=int(unknown),
        unknown_cost_gradings=int(unknown and grading),
    )
