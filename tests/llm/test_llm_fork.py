"""A fork of an `llm` run at step K: no model or tool call is made again for
the steps it inherits (the fake server's requests and the ledger show only the fork's
new calls, all to the fork's model), the fork's first request carries the parent's
conversation up to K, and the fork differs from its parent only after K."""

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_server import FakeServer, completion, usage
from test_llm_curves import GRADER_MODEL, KEY, PRICES, Models, _technique

from events.payloads import LlmConfig
from labrxiv.settings import load_settings
from labrxiv.wiring import Embedded, open_embedded
from projections.ledger import ledger_calls
from runstate.trajectory import steps
from workers.lab.campaign import CampaignPlan, start_campaign
from workers.lab.fork import fork_point, start_fork

pytestmark = pytest.mark.slow


@pytest.fixture
def served(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Embedded, FakeServer]]:
    with FakeServer(models=("lab-priced", "lab-stronger", GRADER_MODEL)) as server:
        server.default = Models()
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        monkeypatch.setenv("LABRXIV_GRADER_MODEL", GRADER_MODEL)
        monkeypatch.setenv("LABRXIV_LLM_TIMEOUT", "5")
        prices = tmp_path / "prices.toml"
        prices.write_text(PRICES + "\n[models.lab-stronger]\ninput = 3.0\noutput = 12.0\n")
        system = open_embedded(load_settings(data_dir=tmp_path / "data", prices=prices), 2)
        yield system, server
        system.close()


def test_a_fork_reuses_what_its_parent_recorded_and_calls_only_its_own_model(
    served: tuple[Embedded, FakeServer],
) -> None:
    system, server = served
    plan = CampaignPlan(
        task="math-prompting",
        labs=1,
        papers=1,
        mode="isolated",
        seed=1,
        attempts=4,
        policy="llm",
        llm=LlmConfig(model="lab-priced", temperature=0.0),
    )
    _, (parent,) = start_campaign(system.bus, plan)
    system.settle()
    events = system.store.read_stream(parent)
    assert events[-1].type == "run.finished" and events[-1].payload.reason == "done"
    taken = list(steps(events))
    k = next(s.number for s, _ in taken if s.scored)  # the step of the first scoring
    point, started, _ = fork_point(system.store, parent, k)

    script = server.default.script  # what the fork's model answers
    u = usage(300, 40)
    paper = {"title": "Fewer shots", "abstract": "a", "body": "b", "claims": [], "method": {}}
    script += [
        completion(
            tool_calls=[
                ("write_file", json.dumps({"path": "config.json", "content": _technique(3)}))
            ],
            usage=u,
        ),
        completion(tool_calls=[("evaluate", "{}")], usage=u),
        completion(tool_calls=[("next_phase", "{}")], usage=u),
        completion(tool_calls=[("submit_paper", json.dumps(paper))], usage=u),
    ]
    before = len(server.completions())
    stronger = LlmConfig(model="lab-stronger", temperature=0.0)
    _, fork = start_fork(system.bus, point, started, "isolated", "llm", stronger)
    system.settle()

    own = system.store.read_stream(fork)
    assert own[0].payload.forked_from == point
    assert own[-1].type == "run.finished" and own[-1].payload.reason == "done", own[-1].payload
    new = server.completions()[before:]
    lab = [r for r in new if r.body["model"] != GRADER_MODEL]
    called = [e for e in own if e.type == "model.called"]
    assert lab and len(lab) == len(called), "only the fork's own calls reached the server"
    assert {r.body["model"] for r in lab} == {"lab-stronger"}
    # the parent's conversation up to K, as recorded: its config written, its grading read
    first_call = json.dumps(lab[0].body["messages"])
    assert "write_file" in first_call and "evaluate" in first_call
    tools = [e.payload.tool for e in own if e.type == "tool.invoked"]
    assert tools == ["write_file", "evaluate", "next_phase", "submit_paper"], (
        "the fork's tool calls are those its own model asked for, none of the parent's again"
    )
    gradings = [e for e in own if e.type == "experiment.scored"]
    assert [g.payload.attempt for g in gradings] == [2], "attempts go on from the parent's"

    system.runner.catch_up()
    with system.store.engine.connect() as conn:
        rows = ledger_calls(conn, run=fork)
    models = [r for r in rows if r["kind"] == "model"]
    assert len(models) == len(called) and {r["model"] for r in models} == {"lab-stronger"}

    replayed = list(steps(own, lambda s, v: system.store.read_stream(s, limit=v + 1)))
    assert [s for s, _ in replayed[: k + 1]] == [s for s, _ in taken[: k + 1]]
    assert all(s.stream == fork for s, _ in replayed[k + 1 :])
    inherited_state = replayed[k + 1][1]  # the fork's start: its parent at K, rebased
    assert inherited_state.attempts == taken[k][1].attempts
    assert inherited_state.exchanges == taken[k][1].exchanges
    assert inherited_state.spend == taken[k][1].spend
