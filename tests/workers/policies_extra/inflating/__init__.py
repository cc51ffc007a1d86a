"""A test policy that inflates its papers: the `search` policy, except that every number
its papers claim or report is raised by a tenth of the way to 1 (claims then exceed the
grader's measurements). What the `grounded` reviewer must catch."""

from dataclasses import replace
from typing import Any

from runstate import RunState
from workers.gym.bundle import Bundle
from workers.lab.policies.search.policy import SearchPolicy
from workers.tools.env import Archive


def _inflated(value: float) -> float:
    return value + (1 - value) / 10 if value < 1 else value * 1.1


class InflatingPolicy(SearchPolicy):
    """`search`, with inflated papers."""

    name = "inflating"

    def decide(self, state: RunState, bundle: Bundle, archive: Archive) -> Any:
        action = super().decide(state, bundle, archive)
        if action.tool != "submit_paper":
            return action
        paper = dict(action.args)
        paper["claims"] = [{**c, "value": _inflated(c["value"])} for c in paper["claims"]]
        paper["experiments"] = [
            {**e, "scores": {k: _inflated(v) for k, v in e["scores"].items()}}
            for e in paper.get("experiments", [])
        ]
        return replace(action, args=paper)


POLICY = InflatingPolicy
