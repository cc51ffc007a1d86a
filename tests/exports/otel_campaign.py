"""A small real campaign for the OpenTelemetry export tests: two `llm` labs on
math-prompting against the tests' scripted model server, in an embedded system whose
log is a SQLite file in a data folder the `labrxiv` command reads too.

Each lab writes a config, evaluates it (the grader calls a model too), fails one tool
call, and submits a paper; one of its model calls is retried after a server error, so
the log holds failed model calls, tools that failed, gradings and usage with cached and
reasoning tokens.
"""

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from events import EventStore
from events.payloads import LlmConfig
from labrxiv.settings import load_settings
from labrxiv.wiring import Embedded, open_embedded
from tests.llm.fake_server import FakeServer, Received, Scripted, completion, server_error, usage
from workers.lab.campaign import CampaignPlan, start_campaign

KEY = "sk-otel-test-key-0123456789abcdef"
LAB_MODEL = "lab-priced"
GRADER_MODEL = "grader-sim"
PRICES = """
[models.lab-priced]
input = 1.0
cached_input = 0.5
output = 4.0

[models.grader-sim]
input = 2.0
cached_input = 1.0
output = 8.0
"""


def _lab_script() -> list[Scripted]:
    """What one lab's model answers, in order."""
    u = usage(400, 60, cached=100, reasoning=20)
    technique = json.dumps(
        {"style": "step_by_step", "few_shot": 0, "self_consistency": 1, "temperature": 0.7}
    )
    paper = json.dumps(
        {
            "title": "Step by step",
            "abstract": "Thinking in steps.",
            "body": "We asked for steps.",
            "claims": [],
            "method": json.loads(technique),
        }
    )
    write = json.dumps({"path": "config.json", "content": technique})
    return [
        completion(tool_calls=[("next_phase", '{"summary": "plan"}')], usage=u),
        completion(tool_calls=[("read_file", json.dumps({"path": "no-such-file"}))], usage=u),
        completion(tool_calls=[("write_file", write)], usage=u),
        completion(tool_calls=[("evaluate", "{}")], usage=u),
        completion(tool_calls=[("next_phase", "{}")], usage=u),
        completion(tool_calls=[("submit_paper", paper)], usage=u),
    ]


class Models:
    """The lab models' and the grader's answers: the grader's with a number, a lab's by
    how many answers its conversation holds (the labs run side by side and their
    requests do not name them). The first request to reach the second answer of any
    lab's script fails with a 503, so one model call is retried."""

    def __init__(self) -> None:
        self.script = _lab_script()
        self.failed = False

    def __call__(self, received: Received) -> Scripted:
        if received.body.get("model") == GRADER_MODEL:
            return completion(text="Step 1: add. The answer is 12.", usage=usage(90, 25))
        messages = received.body.get("messages") or []
        answered = sum(1 for m in messages if m.get("role") == "assistant")
        if answered == 1 and not self.failed:
            self.failed = True
            return server_error(503)
        if answered < len(self.script):
            return self.script[answered]
        return completion(text="done", usage=usage(5, 1))


@dataclass(frozen=True)
class Campaign:
    """A finished campaign's log, and where it is."""

    system: Embedded
    data_dir: Path
    campaign: str
    runs: tuple[str, ...]


@contextmanager
def llm_campaign(tmp_path: Path, labs: int = 2) -> Iterator[Campaign]:
    """Run the campaign to its end (the labs one after the other) and yield it."""
    saved = {k: os.environ.get(k) for k in ("OPENAI_API_KEY", "OPENAI_BASE_URL")}
    saved |= {k: os.environ.get(k) for k in ("LABRXIV_GRADER_MODEL", "LABRXIV_LLM_TIMEOUT")}
    with FakeServer(models=(LAB_MODEL, GRADER_MODEL)) as server:
        server.default = Models()
        os.environ |= {
            "OPENAI_API_KEY": KEY,
            "OPENAI_BASE_URL": server.url,
            "LABRXIV_GRADER_MODEL": GRADER_MODEL,
            "LABRXIV_LLM_TIMEOUT": "5",
        }
        prices = tmp_path / "prices.toml"
        prices.write_text(PRICES)
        data_dir = tmp_path / "data"
        settings = load_settings(data_dir=data_dir, prices=prices)
        system = open_embedded(settings, threads=1)
        try:
            plan = CampaignPlan(
                task="math-prompting",
                labs=labs,
                papers=1,
                mode="isolated",
                seed=1,
                attempts=2,
                policy="llm",
                llm=LlmConfig(model=LAB_MODEL, temperature=0.0),
            )
            campaign, runs = start_campaign(system.bus, plan)
            system.settle()
            assert not system.bus.failures, system.bus.failures
            system.runner.catch_up()
            yield Campaign(system, data_dir, campaign, tuple(runs))
        finally:
            system.close()
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value


def copy_log(source: EventStore, target: EventStore, after: int, upto: int) -> int:
    """Append the events of `source` at positions after `after` up to `upto` to `target`,
    in log order (the blobs they name are left behind): a log that grows as the campaign
    did. Returns how many."""
    events = [r.typed() for r in source.iter_records(after) if r.position <= upto]
    for start in range(0, len(events), 200):
        target.append(events[start : start + 200])
    return len(events)


def cut_inside_a_call(source: EventStore) -> int:
    """A position in the middle of the log where a model call of a run is under way."""
    called = [r.position for r in source.iter_records(types=["model.called"])]
    return called[len(called) // 2]
