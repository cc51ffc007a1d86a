"""The efficiency curves of `llm` campaigns count model tokens and dollars: at every
scored attempt, a curve point's tokens and dollars equal the ledger's sums of the same
run up to that point, the task grader's own model use (math-prompting) included; a
cost that is unknown stays unknown in the ledger, the curves and the run's spend."""

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_server import FakeServer, Received, Scripted, completion, usage

from events.payloads import LlmConfig, ToolReturned
from labrxiv.settings import load_settings
from labrxiv.wiring import Embedded, open_embedded
from projections.curves import curve_points
from projections.ledger import ledger_calls, ledger_totals
from runstate import fold
from workers.lab.campaign import CampaignPlan, start_campaign

KEY = "sk-curves-test-key-0123456789abcdef"
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
"""`lab-unpriced` has no price: its answers are of unknown cost."""


def _technique(samples: int) -> str:
    config = {"style": "step_by_step", "few_shot": 0, "self_consistency": samples}
    return json.dumps(config | {"temperature": 0.7})


def _lab_script() -> list[Scripted]:
    """A lab that tries two techniques, one evaluation each, then writes up."""
    u = usage(400, 60, cached=100, reasoning=20)
    paper = json.dumps(
        {
            "title": "Step by step",
            "abstract": "Thinking in steps.",
            "body": "We asked for steps.",
            "claims": [],
            "method": json.loads(_technique(2)),
        }
    )
    write = [
        completion(
            tool_calls=[("write_file", json.dumps({"path": "config.json", "content": t}))],
            usage=u,
        )
        for t in (_technique(1), _technique(2))
    ]
    evaluate = completion(tool_calls=[("evaluate", "{}")], usage=u)
    return [
        completion(tool_calls=[("next_phase", '{"summary": "plan"}')], usage=u),
        write[0],
        evaluate,
        write[1],
        evaluate,
        completion(tool_calls=[("next_phase", "{}")], usage=u),
        completion(tool_calls=[("submit_paper", paper)], usage=u),
    ]


class Models:
    """One endpoint for the lab's model and the grader's: the grader's calls are answered
    with a number, the lab's from its script."""

    def __init__(self) -> None:
        self.script = _lab_script()

    def __call__(self, received: Received) -> Scripted:
        if received.body.get("model") == GRADER_MODEL:
            return completion(text="Step 1: add. The answer is 12.", usage=usage(90, 25))
        return self.script.pop(0) if self.script else completion(text="done", usage=usage(5, 1))


@pytest.fixture
def system(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Embedded]:
    with FakeServer(models=("lab-priced", "lab-unpriced", GRADER_MODEL)) as server:
        server.default = Models()
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        monkeypatch.setenv("LABRXIV_GRADER_MODEL", GRADER_MODEL)
        monkeypatch.setenv("LABRXIV_LLM_TIMEOUT", "5")
        prices = tmp_path / "prices.toml"
        prices.write_text(PRICES)
        settings = load_settings(data_dir=tmp_path / "data", prices=prices)
        embedded = open_embedded(settings, threads=2)
        yield embedded
        embedded.close()


@pytest.mark.slow
@pytest.mark.parametrize("model", ["lab-priced", "lab-unpriced"])
def test_curve_points_count_what_the_ledger_counts_up_to_each_attempt(
    system: Embedded, model: str
) -> None:
    plan = CampaignPlan(
        task="math-prompting",
        labs=1,
        papers=1,
        mode="isolated",
        seed=1,
        attempts=4,
        policy="llm",
        llm=LlmConfig(model=model, temperature=0.0),
    )
    campaign, (run,) = start_campaign(system.bus, plan)
    system.settle()
    assert not system.bus.failures
    events = system.store.read_stream(run)
    assert events[-1].type == "run.finished", events[-1].payload
    system.runner.catch_up()
    with system.store.engine.connect() as conn:
        points = curve_points(conn, campaign)
        calls = ledger_calls(conn, run=run)
        (totals,) = ledger_totals(conn, by="run", campaign=campaign)
    assert len(points) == 2, "both evaluations were scored"
    assert all(c["kind"] != "grader" or c["grader_calls"] for c in calls)
    assert sum(c["kind"] == "grader" for c in calls) == 2, "each grading called the model"
    for point in points:
        before = [c for c in calls if c["position"] <= point.position]
        assert point.tokens == sum(c["total_tokens"] or 0 for c in before)
        known = [c["cost_usd"] for c in before if c["cost_known"]]
        assert point.cost_usd == pytest.approx(sum(known), rel=1e-12)
        unknown = [c for c in before if c["kind"] != "tool" and c["cost_known"] is False]
        assert point.unknown_cost_calls == len(unknown)
        assert point.tokens > 0 and point.cost_usd > 0, "model use is counted, not flat at 0"
    assert points[1].tokens > points[0].tokens
    # The fake server names its tool calls call_0, call_1… in every answer, as some
    # servers do: the ledger still has a row for each call, with its own seconds.
    invoked = [e for e in events if e.type == "tool.invoked"]
    returned = [e.payload for e in events if isinstance(e.payload, ToolReturned)]
    tools = [c for c in calls if c["kind"] == "tool"]
    assert len({e.payload.call_id for e in invoked}) == len(invoked) > 2
    assert len(tools) == len(invoked)
    assert sorted(c["tool"] for c in tools) == sorted(e.payload.tool for e in invoked)
    assert sum(c["duration_s"] for c in tools) == pytest.approx(sum(r.duration_s for r in returned))
    state = fold(events)
    assert state.spend.tokens == totals.tokens
    assert state.spend.dollars == pytest.approx(totals.dollars, rel=1e-12)
    assert state.spend.unknown_cost == totals.unknown_cost_calls
    if model == "lab-unpriced":
        answers = sum(e.type == "model.responded" for e in events)
        assert totals.unknown_cost_calls == answers, "every lab answer is of unknown cost"
        assert points[-1].unknown_cost_calls > 0
        # the dollars that are known are the gradings' only: never a silent 0 for the rest
        gradings = [c["cost_usd"] for c in calls if c["kind"] == "grader"]
        assert totals.dollars == pytest.approx(sum(gradings), rel=1e-12)
    else:
        assert totals.unknown_cost_calls == 0 and points[-1].unknown_cost_calls == 0
