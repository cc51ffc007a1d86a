"""Scripted model answers for `llm` labs on continual-digits, served by the local fake
server (tests/llm/fake_server.py): the tool calls a lab makes, in the research cycle's
phases (plan → experiment → write-up), each answer a real chat completion.

An answer may be a function of what the lab has been told so far (`Memory`: the scores
of its attempts as the evaluate tool reported them, the last tool output), as a model's
would be: a paper reports the numbers the lab was shown, never numbers this file knows.
"""

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tests.llm.fake_server import Scripted, completion, usage

Config = dict[str, Any]


def _config(method: str, per_class: int, selection: str, epochs: int, lr: float) -> Config:
    return {
        "method": method,
        "replay_per_class": per_class,
        "selection": selection,
        "epochs": epochs,
        "learning_rate": lr,
        "hidden_units": 0,
        "seed": 0,
    }


# Configurations of continual-digits' starter solution and where they land (final
# accuracy; the baseline is 0.194, the reference 0.965, normalized 0.20 and 1).
GOOD = _config("ncm", 20, "herding", 10, 0.1)
"""Nearest class mean over herded exemplars: ~0.91, at the reference (normalized > 0.9)."""
MID = _config("replay", 20, "herding", 1, 0.3)
"""Replay, one epoch: ~0.44, above the baseline, far from the reference."""
MID2 = _config("replay", 20, "random", 10, 0.1)
"""Replay of random exemplars: ~0.79."""
LOW = _config("finetune", 0, "random", 1, 0.01) | {"seed": 1}
"""Barely trained fine-tuning: ~0.17, below the baseline but not degenerate."""
LOW2 = _config("replay", 5, "random", 1, 0.01)
"""~0.13: below the baseline, short of degenerate (constant predictions score 0.10)."""

SAVE = 'np.save(outputs / f"predictions_after_task_{k}.npy", predictions.astype(np.int64))'
CRASH = (
    'config = load_config(Path("config.json"))',
    'config = load_config(Path("config.json"))\n    config["learning_rate"] = float(config["lr"])',
)
"""A patch of solution.py that makes it crash (a key the config does not have)."""
ZEROS = ("predictions.astype(np.int64)", "np.zeros_like(predictions).astype(np.int64)")
"""A patch of solution.py that leaves a debugging line in: every prediction is class 0."""
LOOK = (
    "import numpy as np\n"
    "print(np.bincount(np.load('outputs/predictions_after_task_5.npy'), minlength=10))"
)
"""Python that looks at the last stage's predictions (a class histogram)."""


@dataclass
class Memory:
    """What a lab has been told so far, from the requests its model received."""

    attempts: dict[int, dict[str, float]] = field(default_factory=dict)
    """Scores per attempt, as the evaluate tool reported them to the lab."""
    last_output: str = ""
    """The latest tool result in the conversation."""


ATTEMPT = re.compile(r"^attempt (\d+): (.+)$", re.MULTILINE)


def remember(memory: Memory, body: dict[str, Any]) -> None:
    """Take into `memory` what a request's conversation told the lab."""
    tools = [m for m in body.get("messages", []) if m.get("role") == "tool"]
    for message in tools:
        for number, table in ATTEMPT.findall(str(message.get("content", ""))):
            scores = dict(item.split("=") for item in table.split(", "))
            memory.attempts[int(number)] = {k: float(v) for k, v in scores.items()}
    if tools:
        memory.last_output = str(tools[-1].get("content", ""))


Turn = Scripted | Callable[[Memory], Scripted]
"""One answer, or a function of what the lab has been told that gives it."""


def call(tool: str, **args: Any) -> tuple[str, str]:
    return tool, json.dumps(args)


def answer(
    *calls: tuple[str, str], text: str | None = None, tokens: tuple[int, int] = (400, 60)
) -> Scripted:
    """A completion asking for `calls`, with the usage the provider reports."""
    return completion(text=text, tool_calls=calls, usage=usage(*tokens))


def next_phase(summary: str = "on") -> Scripted:
    return answer(call("next_phase", summary=summary))


def write_config(config: Config) -> Scripted:
    return answer(call("write_file", path="config.json", content=json.dumps(config)))


def patch(change: tuple[str, str]) -> Scripted:
    old, new = change
    return answer(call("apply_patch", path="solution.py", old=old, new=new))


def bash(command: str) -> Scripted:
    return answer(call("bash", command=command))


def python(code: str) -> Scripted:
    return answer(call("python", code=code))


def read(path: str) -> Scripted:
    return answer(call("read_file", path=path))


EVALUATE = answer(call("evaluate"))


def experiment(config: Config) -> list[Scripted]:
    """Write a configuration and have it graded."""
    return [write_config(config), EVALUATE]


def paper(
    attempt: int | None,
    method: Config,
    *,
    value: float | None = None,
    table: dict[int, Config] | None = None,
    extra: tuple[dict[str, Any], ...] = (),
) -> Turn:
    """Submit a paper reporting `attempt`'s final accuracy as the lab was told it (or
    `value`), with `method`, an experiments table of the attempts in `table` with their
    reported scores, and `extra` claims as given."""

    def build(memory: Memory) -> Scripted:
        claims = list(extra)
        if attempt is not None:
            told = memory.attempts[attempt]["final_accuracy"]
            claim = {"subtask": "final_accuracy", "metric": "accuracy", "attempt": attempt}
            claims.insert(0, claim | {"value": told if value is None else value})
        experiments = [
            {"attempt": k, "config": config, "scores": memory.attempts[k]}
            for k, config in (table or {}).items()
        ]
        body = {
            "title": "Continual digits: what we measured",
            "abstract": "We report the attempts we ran.",
            "body": "| attempt | final accuracy |\n| --- | --- |\n"
            + "".join(f"| {k} | {s['final_accuracy']} |\n" for k, s in memory.attempts.items()),
            "claims": claims,
            "method": method,
            "experiments": experiments,
        }
        return answer(call("submit_paper", **body))

    return build


def write_up(turn: Turn) -> list[Turn]:
    """Move to the write-up phase and submit (the paper tool is the write-up's)."""
    return [next_phase("results are in"), turn]
