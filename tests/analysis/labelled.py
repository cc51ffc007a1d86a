"""Runs the labelled set (scenarios.py) through the real system: one embedded campaign of
`llm` labs on continual-digits, each lab's model answered from its own script by the
local fake OpenAI-compatible server, every step a real lab step (tools in the sandbox,
the real grader), and the runs read back from the log."""

import threading
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from events import Event
from events.payloads import LlmConfig
from labrxiv.settings import load_settings
from labrxiv.wiring import open_embedded
from tests.analysis.lab_script import Memory, Turn, remember
from tests.analysis.scenarios import ATTEMPTS, STEPS, Scenario
from tests.llm.fake_server import FakeServer, Received, Scripted, error
from workers.lab.campaign import CampaignPlan, start_campaign

SEED = 7
"""The campaign's seed: lab i's requests carry seed `SEED * 1000 + i` (`start_campaign`)."""
KEY = "sk-labelled-set-key-0123456789abcdef"


@dataclass
class Labs:
    """The fake model: each lab's requests answered from its scenario's script, in order."""

    scripts: list[deque[Turn]]
    memories: list[Memory]
    problems: dict[int, str] = field(default_factory=dict)
    """Labs whose script ran out or broke, and why (a scenario that did not run as made)."""
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def of(cls, scenarios: list[Scenario]) -> "Labs":
        return cls([deque(s.turns) for s in scenarios], [Memory() for _ in scenarios])

    def __call__(self, received: Received) -> Scripted:
        lab = int(received.body["seed"]) - SEED * 1000
        remember(self.memories[lab], received.body)
        script = self.scripts[lab]
        if not script:
            return self._broken(lab, "the script ran out")
        turn = script.popleft()
        try:
            return turn(self.memories[lab]) if callable(turn) else turn
        except (KeyError, IndexError, ValueError) as exc:
            return self._broken(lab, f"a turn could not be built: {exc!r}")

    def _broken(self, lab: int, why: str) -> Scripted:
        with self._lock:
            self.problems.setdefault(lab, why)
        # A 400 is not retried: the run ends with `error` at once, and the check says why.
        return error(400, why)


@dataclass(frozen=True)
class LabelledRun:
    scenario: Scenario
    events: list[Event]
    left: int
    """Script turns the lab never asked for."""
    problem: str | None


@contextmanager
def labelled_runs(scenarios: list[Scenario], tmp: Path) -> Iterator[list[LabelledRun]]:
    """Run `scenarios` as one campaign, one lab each; yields their runs, in order."""
    labs = Labs.of(scenarios)
    with FakeServer(default=labs) as server, pytest.MonkeyPatch.context() as env:
        env.setenv("OPENAI_API_KEY", KEY)
        env.setenv("OPENAI_BASE_URL", server.url)
        env.setenv("LABRXIV_LLM_TIMEOUT", "30")
        system = open_embedded(load_settings(data_dir=tmp / "data"), threads=4)
        try:
            plan = CampaignPlan(
                task="continual-digits",
                labs=len(scenarios),
                papers=1,
                mode="isolated",
                seed=SEED,
                attempts=ATTEMPTS,
                steps=STEPS,
                policy="llm",
                llm=LlmConfig(model="fake-model", temperature=0.0),
            )
            _campaign, streams = start_campaign(system.bus, plan)
            system.settle()
            assert not system.bus.failures, system.bus.failures
            yield [
                LabelledRun(
                    scenario,
                    system.store.read_stream(stream),
                    len(labs.scripts[index]),
                    labs.problems.get(index),
                )
                for index, (scenario, stream) in enumerate(zip(scenarios, streams, strict=True))
            ]
        finally:
            system.close()
