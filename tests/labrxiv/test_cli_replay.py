"""`labrxiv replay RUN`: the trajectory of a recorded run, step by step, and its state at
a step or a log position, as a person and as a machine read it."""

import json
from pathlib import Path

import pytest
from cli_support import Cli

from events import EventStore
from labrxiv.settings import load_settings
from labrxiv.wiring import open_embedded
from runstate import fold
from runstate.trajectory import state_at
from workers.lab.campaign import CampaignPlan, start_campaign


@pytest.fixture
def recorded(workdir: Path) -> tuple[str, Path]:
    """A finished offline run in `workdir/data`, its read models caught up."""
    data = workdir / "data"
    system = open_embedded(load_settings(data_dir=data), threads=1)
    try:
        plan = CampaignPlan(
            task="continual-digits", labs=1, papers=1, mode="isolated", seed=4, attempts=2
        )
        _, (run,) = start_campaign(system.bus, plan)
        system.settle()
        system.runner.catch_up()
    finally:
        system.close()
    return run, data


def test_replay_prints_each_step_and_the_state(recorded: tuple[str, Path], cli: Cli) -> None:
    run, data = recorded
    said = cli("replay", run, LABRXIV_DATA_DIR=str(data))
    assert said.code == 0, said.out
    for shown in ("write_file", "evaluate", "submit_paper", "finish", "run.finished", "done"):
        assert shown in said.out
    partial = cli("replay", run, "--step", "2", LABRXIV_DATA_DIR=str(data))
    assert partial.code == 0 and "3 steps" in partial.text and "finish " not in partial.out


def test_replay_json_is_the_fold_of_the_log(recorded: tuple[str, Path], cli: Cli) -> None:
    run, data = recorded
    said = cli("replay", run, "--json", "--step", "2", LABRXIV_DATA_DIR=str(data))
    assert said.code == 0, said.out
    shown = json.loads(said.stdout)
    events = EventStore.from_url(load_settings(data_dir=data).store_url).read_stream(run)
    taken, state = state_at(events, step=2)
    assert [s["number"] for s in shown["steps"]] == [0, 1, 2]
    assert shown["state"]["version"] == state.version == taken[-1].last_version
    assert shown["state"]["attempts"][0]["number"] == 1
    whole = json.loads(cli("replay", run, "--json", LABRXIV_DATA_DIR=str(data)).stdout)
    assert whole["state"]["finished"]["reason"] == fold(events).finished.reason == "done"
    at = shown["steps"][1]["last_position"]
    by_position = json.loads(
        cli("replay", run, "--json", "--position", str(at), LABRXIV_DATA_DIR=str(data)).stdout
    )
    assert by_position["steps"] == shown["steps"][:2]


def test_replay_of_what_is_not_there_is_one_line(recorded: tuple[str, Path], cli: Cli) -> None:
    run, data = recorded
    for args, words in [
        (("replay", "run-nope"), "no run"),
        (("replay", run, "--step", "999"), "steps"),
        (("replay", run, "--step", "1", "--position", "3"), "not both"),
    ]:
        said = cli(*args, LABRXIV_DATA_DIR=str(data))
        assert said.code != 0 and words in said.text, said.out
        assert "Traceback" not in said.out
