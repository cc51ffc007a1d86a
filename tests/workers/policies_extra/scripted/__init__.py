"""A test policy in a folder of its own: proof that adding a policy touches one folder."""

from events.payloads import RunFinished
from workers.lab.policies import StepInput, StepOutcome
from workers.tools.invoke import invoke

SCRIPT = [
    ("read_file", {"path": "config.json"}),
    ("evaluate", {}),
    ("finish", {"summary": "scripted"}),
]


class ScriptedPolicy:
    """Takes the tool calls of `SCRIPT` in order, one a step."""

    name = "scripted"

    def step(self, step: StepInput) -> StepOutcome:
        tool, args = SCRIPT[min(step.state.steps, len(SCRIPT) - 1)]
        outcome = invoke(step.env, tool, args, call_id=f"{step.state.stream}:{step.version + 1}")
        payloads = list(outcome.payloads)
        if outcome.finish:
            payloads.append(RunFinished(reason="done", detail=outcome.output[:200]))
        return payloads, outcome.blobs


POLICY = ScriptedPolicy
