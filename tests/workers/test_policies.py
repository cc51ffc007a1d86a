"""Policies are found by folder behind one protocol: a new one runs a lab end to end
without touching any other file, and `tasks validate` checks a card's policies."""

import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from events.payloads import LlmConfig
from labrxiv.cli import app
from labrxiv.settings import load_settings
from labrxiv.wiring import open_embedded
from tests.sent_bus import Sent
from workers.lab.campaign import CampaignPlan, start_campaign
from workers.lab.policies import new_policies, policy_names, uses_model
from workers.metrics import policy_label

GYM = Path(__file__).resolve().parents[2] / "gym"
EXTRA = Path(__file__).resolve().parent / "policies_extra"


def _bundle(root: Path, policy_line: str) -> Path:
    """The continual-digits bundle as task `scripted-digits`, with its policies changed."""
    folder = shutil.copytree(GYM / "continual-digits", root / "scripted-digits")
    card = folder / "task.toml"
    text = card.read_text().replace('id = "continual-digits"', 'id = "scripted-digits"')
    assert 'policies = ["search", "llm", "agent"]' in text
    card.write_text(text.replace('policies = ["search", "llm", "agent"]', policy_line))
    return folder


def test_the_shipped_policies_are_found() -> None:
    assert policy_names() == ["agent", "llm", "search"]
    assert {name: type(p).__name__ for name, p in new_policies().items()} == {
        "agent": "AgentPolicy",
        "llm": "LlmPolicy",
        "search": "SearchPolicy",
    }


def test_a_policy_in_a_folder_of_its_own_runs_a_lab(extra_policies: None, tmp_path: Path) -> None:
    assert "scripted" in policy_names()
    gym = tmp_path / "gym"
    _bundle(gym, 'policies = ["scripted"]')
    settings = load_settings(data_dir=tmp_path / "data", gym_path=[gym])
    system = open_embedded(settings, threads=1)
    try:
        plan = CampaignPlan(
            task="scripted-digits",
            labs=1,
            papers=1,
            mode="isolated",
            seed=0,
            policy="scripted",
            attempts=2,
        )
        _campaign, (run,) = start_campaign(system.bus, plan)
        system.settle()
        events = system.store.read_stream(run)
    finally:
        system.close()
    tools = [e.payload.tool for e in events if e.type == "tool.invoked"]
    assert tools == ["read_file", "evaluate", "finish"]
    assert sum(e.type == "experiment.scored" for e in events) == 1
    assert events[-1].type == "run.finished" and events[-1].payload.reason == "done"


def test_tasks_validate_names_a_policy_no_worker_has(tmp_path: Path) -> None:
    folder = _bundle(tmp_path, 'policies = ["search", "oracle"]')
    result = CliRunner().invoke(app, ["tasks", "validate", str(folder)])
    assert result.exit_code == 1
    assert "no policy 'oracle' (known: agent, llm, search)" in result.output
    good = _bundle(tmp_path / "good", 'policies = ["search", "llm"]')
    assert CliRunner().invoke(app, ["tasks", "validate", str(good)]).output.strip() == "ok"


@pytest.mark.parametrize("name", ["gpt-agent", "oracle"])
def test_a_campaign_on_a_card_naming_a_policy_no_worker_has_says_what_validate_says(
    tmp_path: Path, name: str
) -> None:
    """One rule for a card's policies: the campaign refuses the card before anything is
    written, with the line `tasks validate` prints (a name the registry lacks, whatever
    its spelling)."""
    folder = _bundle(tmp_path / "gym", f'policies = ["search", "{name}"]')
    env = {"LABRXIV_DATA_DIR": str(tmp_path / "data"), "COLUMNS": "300"}
    validated = CliRunner().invoke(app, ["tasks", "validate", str(folder)], env=env)
    line = f"task.toml: policies: no policy {name!r} (known: agent, llm, search)"
    assert validated.exit_code == 1 and f"- {line}" in validated.output, validated.output
    result = CliRunner().invoke(
        app,
        ["campaign", "--task", "scripted-digits", "--gym-path", str(folder.parent), "--labs", "1"],
        env=env,
    )
    assert result.exit_code == 2, result.output
    assert f"- {line}" in result.output, result.output
    assert not (tmp_path / "data").exists() or not any((tmp_path / "data").rglob("*.db"))


def test_a_policy_says_whether_its_labs_use_a_model(extra_policies: None) -> None:
    """The registry says which policies use a model (`Policy.model_settings`), not their names:
    a campaign gives model settings to the labs of any such policy, and to no other."""
    assert uses_model("llm") and uses_model("modelled")
    assert not any(uses_model(name) for name in ("search", "scripted", "no-such-policy"))
    llm = LlmConfig(model="some-model")
    given = {}
    for policy in ("modelled", "search"):
        bus = Sent()
        plan = CampaignPlan(
            task="continual-digits", labs=1, papers=1, mode="isolated", seed=0, policy=policy
        )
        start_campaign(bus, replace(plan, llm=llm))
        (started,) = [e for e in bus.published() if e["payload"]["type"] == "run.started"]
        given[policy] = started["payload"]["llm"]
    assert given["modelled"]["model"] == "some-model"
    assert given["search"] is None


def test_step_metrics_label_the_policies_the_registry_has(extra_policies: None) -> None:
    assert [policy_label(p) for p in ("search", "llm", "scripted", None)] == [
        "search",
        "llm",
        "scripted",
        "unknown",
    ]
    assert policy_label("simulated") == "other", "the tests' simulated runs are no policy"
