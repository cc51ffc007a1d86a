"""Conditional parameters of a card's search space: which apply in a configuration, and
what `tasks validate` names in a table of conditions that is wrong."""

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from labrxiv.cli import app
from tests.conditional_bundle import CARD, STARTER, conditional_bundle
from workers.gym.bundle import load_bundle, validate_bundle
from workers.lab.policies.llm.context import brief


def _with_conditions(table: str) -> str:
    return CARD[: CARD.index("[search_space_conditions]")] + "[search_space_conditions]\n" + table


def test_a_parameter_applies_only_when_its_conditions_hold_down_the_chain(tmp_path: Path) -> None:
    card = load_bundle(conditional_bundle(tmp_path)).card
    assert card.search_space_conditions["n_neighbors"] == {"model": ["knn"]}  # one value: a list
    assert card.applicable(STARTER) == ["features", "model", "n_neighbors", "scale", "weights"]
    assert card.applicable(STARTER | {"n_neighbors": 1}) == [
        "features",
        "model",
        "n_neighbors",
        "scale",
    ]
    # weights reads n_neighbors, which does not apply to ridge: weights does not either,
    # whatever value n_neighbors holds.
    assert card.applicable(STARTER | {"model": "ridge"}) == ["alpha", "features", "model", "scale"]
    assert card.settings(STARTER | {"model": "tree"}) == {
        "model": "tree",
        "max_depth": 4,
        "scale": True,
        "features": "raw",
        "note": "not searched",
    }


def test_a_card_without_conditions_has_every_parameter_apply(tmp_path: Path) -> None:
    card = load_bundle(conditional_bundle(tmp_path, _with_conditions(""))).card
    assert card.applicable(STARTER) == sorted(card.search_space)
    assert card.settings(STARTER) == STARTER


def test_the_bundle_validates(tmp_path: Path) -> None:
    assert validate_bundle(conditional_bundle(tmp_path)) == []


@pytest.mark.parametrize(
    ("table", "problems"),
    [
        (
            'depth = { model = "tree" }\nalpha = { solver = "lbfgs" }\n',
            [
                "search_space_conditions.depth: 'depth' is not a parameter of search_space",
                "search_space_conditions.alpha: depends on 'solver', not a parameter of "
                "search_space",
            ],
        ),
        (
            'alpha = { model = ["ridge", "lasso"] }\nweights = { n_neighbors = 7 }\n',
            [
                "search_space_conditions.alpha.model: 'lasso' is not one of model's values "
                "['knn', 'ridge', 'tree']",
                "search_space_conditions.weights.n_neighbors: 7 is not one of n_neighbors's "
                "values [1, 5, 15, 30]",
            ],
        ),
        (
            "alpha = { alpha = 1.0 }\nscale = { max_depth = 4 }\nmax_depth = { scale = true }\n",
            [
                "search_space_conditions.alpha: conditioned on itself",
                "search_space_conditions: a cycle: max_depth -> scale -> max_depth",
            ],
        ),
        (
            'n_neighbors = { model = "knn" }\nweights = { n_neighbors = [] }\nalpha = 3\n',
            [
                "search_space_conditions.alpha: Input should be a valid dictionary (got 3)",
                "search_space_conditions.weights.n_neighbors: lists no values",
            ],
        ),
        (
            'n_neighbors = "model"\n',
            [
                "search_space_conditions.n_neighbors: Input should be a valid dictionary "
                "(got 'model')"
            ],
        ),
        (
            "n_neighbors = []\n",
            ["search_space_conditions.n_neighbors: Input should be a valid dictionary"],
        ),
    ],
    ids=[
        "unknown parameters",
        "values not in the lists",
        "itself and a cycle",
        "malformed",
        "a string, not a table",
        "a list, not a table",
    ],
)
def test_validate_names_every_bad_condition_one_line_each(
    tmp_path: Path, table: str, problems: list[str]
) -> None:
    folder = conditional_bundle(tmp_path, _with_conditions(table))
    assert validate_bundle(folder) == [f"task.toml: {p}" for p in problems]


def test_validate_names_starter_values_the_conditions_cannot_read(tmp_path: Path) -> None:
    folder = conditional_bundle(tmp_path)
    config = STARTER | {"model": "svm", "alpha": 3.0}  # alpha does not apply: any value
    (folder / "workspace" / "config.json").write_text(json.dumps(config))
    assert validate_bundle(folder) == [
        "workspace/config.json: model = 'svm' is not one of search_space.model's values "
        "['knn', 'ridge', 'tree'] (a condition reads it)"
    ]
    config = STARTER | {"model": "tree", "max_depth": 3}
    (folder / "workspace" / "config.json").write_text(json.dumps(config))
    assert validate_bundle(folder) == [
        "workspace/config.json: max_depth = 3 is not one of search_space.max_depth's values "
        "[2, 4, 8, 16] (it applies in the starter)"
    ]


def test_tasks_show_and_a_labs_brief_say_when_each_parameter_applies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    folder = conditional_bundle(tmp_path / "gym")
    result = CliRunner().invoke(
        app, ["tasks", "show", "pick-a-model", "--gym-path", str(folder.parent)]
    )
    assert result.exit_code == 0, result.output
    rows = {
        line.split(line[0])[1].strip(): line
        for line in result.output.splitlines()
        if line[:1] in ("│", "┃")
    }
    assert "applies when" in rows["parameter"]
    # A chain of conditions is said whole: weights needs n_neighbors, which needs knn.
    assert "model is knn and n_neighbors is one of 5, 15, 30" in rows["weights"]
    assert "always" in rows["scale"]
    told = brief(load_bundle(folder).card)
    assert "- alpha: [0.01, 0.1, 1.0, 10.0] (applies only when model is ridge;" in told
    assert "- scale: [True, False]\n" in told
