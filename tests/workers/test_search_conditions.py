"""The search policy on a card with conditional parameters: it never varies a parameter
that does not apply, never tries one configuration twice, and its papers list only the
settings that apply (a kNN/ridge task had it vary `alpha` for kNN and repeat scores)."""

import itertools
import re
from pathlib import Path
from typing import Any

import pytest

from labrxiv.settings import load_settings
from labrxiv.wiring import open_embedded
from runstate import fold
from tests.conditional_bundle import STARTER, conditional_bundle
from workers.gym.bundle import load_bundle
from workers.gym.card import TaskCard
from workers.lab.campaign import CampaignPlan, start_campaign


def _campaign(tmp_path: Path, mode: str, labs: int) -> tuple[TaskCard, list[Any], list[Any]]:
    """The card, each run's final state, and every paper's `submit_paper` arguments."""
    gym = tmp_path / "gym"
    card = load_bundle(conditional_bundle(gym)).card
    system = open_embedded(load_settings(data_dir=tmp_path / "data", gym_path=[gym]), threads=2)
    try:
        plan = CampaignPlan(
            task="pick-a-model", labs=labs, papers=3, mode=mode, seed=11, attempts=18
        )  # type: ignore[arg-type]
        _campaign_id, runs = start_campaign(system.bus, plan)
        system.bus.join()
        assert not system.bus.failures
        streams = [system.store.read_stream(run) for run in runs]
    finally:
        system.close()
    papers = [
        e.payload.args
        for events in streams
        for e in events
        if e.type == "tool.invoked" and e.payload.tool == "submit_paper"
    ]
    return card, [fold(events) for events in streams], papers


@pytest.mark.parametrize(("mode", "labs"), [("isolated", 1), ("archive", 2)])
def test_no_attempt_varies_a_parameter_that_does_not_apply(
    tmp_path: Path, mode: str, labs: int
) -> None:
    card, states, papers = _campaign(tmp_path, mode, labs)
    for state in states:
        assert len(state.attempts) == 18
        seen = set()
        for attempt in state.attempts:
            config = attempt.config
            applies = card.applicable(config)
            for name in set(card.search_space) - set(applies):
                assert config[name] == STARTER[name], (attempt.number, name, config)
            for name in applies:
                assert config[name] in card.search_space[name], (attempt.number, name, config)
            settings = tuple(sorted(card.settings(config).items()))
            assert settings not in seen, f"attempt {attempt.number} repeats {settings}"
            seen.add(settings)
        models = {a.config["model"] for a in state.attempts}
        assert len(models) >= 2  # the search did cross between branches of the space
    assert len(papers) == 3 * labs
    for paper in papers:
        _assert_lists_only_applicable_settings(card, paper)


def _assert_lists_only_applicable_settings(card: TaskCard, paper: dict[str, Any]) -> None:
    configs = {e["attempt"]: e["config"] for e in paper["experiments"]}
    if paper["method"]:
        assert paper["method"] == card.settings(STARTER | paper["method"])
    results = paper["body"].split("## Results", 1)[1].split("## Best configuration", 1)[0]
    rows = re.findall(r"^\| (\d+) \| ([^|]*) \|", results, flags=re.MULTILINE)
    best = re.search(r"^Attempt (\d+): (.*)$", paper["body"], flags=re.MULTILINE)
    assert rows and best
    for number, cell in [*rows, best.groups()]:
        if int(number) in configs:
            shown = dict(setting.split("=", 1) for setting in cell.strip().split(", "))
            assert set(shown) == set(card.settings(configs[int(number)])), (number, cell)
    if " with " in paper["title"] and "baseline setup" not in paper["title"]:
        named = {s.split("=")[0] for s in paper["title"].split(" with ", 1)[1].split(", ")}
        best_config = configs[int(best.group(1))]
        assert named <= set(card.applicable(best_config)), paper["title"]


def test_a_lab_of_one_paper_says_so_in_words(tmp_path: Path) -> None:
    """The run's ending counts its papers as words do: "1 paper", not "1 papers"."""
    gym = tmp_path / "gym"
    conditional_bundle(gym)
    system = open_embedded(load_settings(data_dir=tmp_path / "data", gym_path=[gym]), threads=1)
    try:
        plan = CampaignPlan(
            task="pick-a-model", labs=1, papers=1, mode="isolated", seed=0, attempts=1
        )  # type: ignore[arg-type]
        _campaign_id, runs = start_campaign(system.bus, plan)
        system.bus.join()
        events = system.store.read_stream(runs[0])
    finally:
        system.close()
    finished = [e.payload for e in events if e.type == "run.finished"]
    assert finished and finished[0].detail.startswith("run finished: 1 paper; best "), finished


def test_a_lab_that_has_tried_every_configuration_finishes_instead_of_repeating_one(
    tmp_path: Path,
) -> None:
    """With more attempts than the space has configurations, the lab tries each once and
    then finishes, saying why (it re-ran old configurations once the space was used up)."""
    gym = tmp_path / "gym"
    card = load_bundle(conditional_bundle(gym)).card
    names = list(card.search_space)
    every = (
        dict(zip(names, values, strict=True))
        for values in itertools.product(*card.search_space.values())
    )
    distinct = {tuple(sorted(card.settings(STARTER | config).items())) for config in every}
    system = open_embedded(load_settings(data_dir=tmp_path / "data", gym_path=[gym]), threads=1)
    try:
        plan = CampaignPlan(
            task="pick-a-model", labs=1, papers=2, mode="isolated", seed=3, attempts=200
        )
        _campaign_id, (run,) = start_campaign(system.bus, plan)
        system.bus.join()
        assert not system.bus.failures
        events = system.store.read_stream(run)
    finally:
        system.close()
    state = fold(events)
    tried = [tuple(sorted(card.settings(a.config).items())) for a in state.attempts]
    assert len(tried) == len(set(tried)), "a configuration was tried twice"
    assert set(tried) == distinct
    assert len(state.papers) >= 1
    finished = events[-1].payload
    assert events[-1].type == "run.finished" and finished.reason == "done", finished
    assert "every configuration of the search space tried" in finished.detail, finished.detail
