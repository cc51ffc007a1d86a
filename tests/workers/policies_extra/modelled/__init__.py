"""A test policy other than `llm` whose labs use a model: its runs get the model settings."""

from events.payloads import RunFinished
from workers.lab.policies import StepInput, StepOutcome


class ModelledPolicy:
    """Ends its run at once, naming the model its run was given."""

    name = "modelled"
    model_settings = frozenset({"model"})

    def step(self, step: StepInput) -> StepOutcome:
        config = step.state.started.llm
        detail = f"model {config.model}" if config else "no model"
        return [RunFinished(reason="done", detail=detail)], {}


POLICY = ModelledPolicy
