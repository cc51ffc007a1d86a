"""Policies are found by folder behind one protocol: a new one runs a lab end to end
without touching any other file, and `tasks validate` checks a card's policies."""

import shutil
from pathlib import Path

from typer.testing import CliRunner

from labrxiv.cli import app
from labrxiv.settings import load_settings
from labrxiv.wiring import open_embedded
from workers.lab.campaign import CampaignPlan, start_campaign
from workers.lab.policies import new_policies, policy_names

GYM = Path(__file__).resolve().parents[2] / "gym"
EXTRA = Path(__file__).resolve().parent / "policies_extra"


def _bundle(root: Path, policy_line: str) -> Path:
    """The continual-digits bundle as task `scripted-digits`, with its policies changed."""
    folder = shutil.copytree(GYM / "continual-digits", root / "scripted-digits")
    card = folder / "task.toml"
    text = card.read_text().replace('id = "continual-digits"', 'id = "scripted-digits"')
    card.write_text(text.replace('policies = ["search", "llm"]', policy_line))
    return folder


def test_the_shipped_policies_are_found() -> None:
    assert policy_names() == ["llm", "search"]
    assert {name: type(p).__name__ for name, p in new_policies().items()} == {
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
    assert "no policy 'oracle' (known: llm, search)" in result.output
    good = _bundle(tmp_path / "good", 'policies = ["search", "llm"]')
    assert CliRunner().invoke(app, ["tasks", "validate", str(good)]).output.strip() == "ok"
