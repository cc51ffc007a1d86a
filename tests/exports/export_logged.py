"""What the export tests read: made through the real embedded system: an `llm` campaign
against the local fake model server (one lab that plans, writes a config, evaluates,
and submits a paper, each answer a tool call) and a `search` campaign, in one data
folder shared by the tests of this folder."""

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from events import EventStore
from tests.llm.fake_server import Received, Scripted, completion, usage

KEY = "sk-export-test-key-0123456789abcdef"
MODEL = "gpt-4o-mini"
CONFIG = {
    "method": "replay",
    "replay_per_class": 20,
    "selection": "herding",
    "epochs": 10,
    "learning_rate": 0.1,
    "hidden_units": 64,
    "seed": 0,
}


@dataclass(frozen=True)
class Logged:
    """The data folder, its campaigns, and what the model server was sent and answered."""

    data_dir: Path
    llm_campaign: str
    llm_run: str
    search_campaign: str
    received: list[Received]
    """The chat requests the server got, in order."""
    answers: list[Scripted]
    """The answers it gave, in order."""

    @property
    def last_answer(self) -> dict[str, Any]:
        """The server's last answer's message."""
        return dict(self.reported(-1)["choices"][0]["message"])

    def reported(self, index: int) -> dict[str, Any]:
        """The body of the server's answer `index`."""
        body = self.answers[index].body
        assert isinstance(body, dict)
        return body

    def store(self) -> EventStore:
        return EventStore.from_url(f"sqlite:///{self.data_dir / 'labrxiv.db'}", create=False)


def cycle() -> list[Scripted]:
    """A model that plans, writes a config, runs one experiment and writes it up."""
    spent = usage(100, 20, cached=10, reasoning=5)
    paper = {
        "title": "Replay with herding",
        "abstract": "Replay beats fine-tuning.",
        "body": "We replayed 20 exemplars per class.",
        "claims": [{"subtask": "final_accuracy", "metric": "accuracy", "value": 0.9, "attempt": 1}],
        "method": CONFIG,
    }
    written = {"path": "config.json", "content": json.dumps(CONFIG)}
    return [
        completion(tool_calls=[("next_phase", '{"summary": "plan: replay"}')], usage=spent),
        completion(tool_calls=[("write_file", json.dumps(written))], usage=spent),
        completion(tool_calls=[("evaluate", "{}")], usage=spent),
        completion(tool_calls=[("next_phase", "{}")], usage=spent),
        completion(tool_calls=[("submit_paper", json.dumps(paper))], usage=spent),
    ]
