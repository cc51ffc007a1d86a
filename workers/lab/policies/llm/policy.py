"""The `llm` policy as the lab step sees it: one model call (and its tools) a step."""

from events.bounded_cache import BoundedCache
from events.payloads import LlmConfig
from workers.lab.policies.base import StepInput, StepOutcome
from workers.lab.policies.llm.history import PARSED_KEPT, ParsedResponses
from workers.lab.policies.llm.step import LlmStep, llm_step
from workers.lab.policies.llm.truncation import ExchangeSizes


class LlmPolicy:
    """Any OpenAI-compatible model, through the gateway, in explicit research phases."""

    name = "llm"
    card_needs = ()
    model_settings = frozenset(LlmConfig.model_fields)

    def __init__(self) -> None:
        self.sizes = ExchangeSizes()
        """This worker's measured conversation groups of runs, for the truncation rule."""
        self.parsed: ParsedResponses = BoundedCache(PARSED_KEPT)
        """This worker's parsed model responses, by hash."""

    def step(self, step: StepInput) -> StepOutcome:
        """Send the call written ahead, act on the answer, write the next call ahead."""
        model = step.gateway(step.state.started.llm)  # `llm_step` refuses a run without one
        return llm_step(LlmStep(step, model, self.sizes, self.parsed))
