"""The `llm` policy as the lab step sees it: one model call (and its tools) a step."""

from events.payloads import RunFinished
from workers.lab.policies.base import StepInput, StepOutcome
from workers.lab.policies.llm.step import LlmStep, llm_step
from workers.lab.policies.llm.truncation import ExchangeSizes


class LlmPolicy:
    """Any OpenAI-compatible model, through the gateway, in explicit research phases."""

    name = "llm"

    def __init__(self) -> None:
        self.sizes = ExchangeSizes()
        """This worker's measured conversation groups of runs, for the truncation rule."""

    def step(self, step: StepInput) -> StepOutcome:
        """Send the call written ahead, act on the answer, write the next call ahead."""
        config = step.state.started.llm
        if config is None:
            return [RunFinished(reason="error", detail="an llm run needs llm settings")], {}
        return llm_step(
            LlmStep(
                state=step.state,
                bundle=step.bundle,
                gateway=step.gateway(config),
                store=step.store,
                inflight=step.inflight,
                env=step.env,
                streams=step.streams,
                spend=step.spend,
                sizes=self.sizes,
                version=step.version,
                final=step.final,
            )
        )
