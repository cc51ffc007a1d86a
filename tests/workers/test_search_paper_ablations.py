"""A search lab's paper presents its best configuration's ablations: the graded attempts
that changed one parameter of it, in the body and among the structured experiments."""

from pathlib import Path
from types import SimpleNamespace
from typing import Any

from runstate import Attempt
from tests.conditional_bundle import STARTER, conditional_bundle
from workers.gym.bundle import load_bundle
from workers.gym.card import Subtask
from workers.lab.policies.search.paper import write_paper

PRIMARY = Subtask(name="acc", metric="accuracy", direction="maximize", baseline=0.5, sota=1.0)
BEST = {"lr": 0.1, "epochs": 10, "seed": 0}


def _paper(attempts: list[Attempt], this_round: int, papers: int = 0) -> dict[str, Any]:
    card = SimpleNamespace(
        title="Digits",
        primary="acc",
        subtask=lambda _name: PRIMARY,
        subtasks=[PRIMARY],
        goal="Learn the digits.",
        settings=dict,  # no conditional parameters: every setting applies
    )
    bundle = SimpleNamespace(card=card, starter_config=lambda: {"lr": 0.1, "epochs": 1, "seed": 0})
    state = SimpleNamespace(
        attempts=attempts,
        attempts_since_paper=lambda: attempts[-this_round:],
        papers=[object()] * papers,
        lab="lab-0",
    )
    return write_paper(state, bundle, [])  # type: ignore[arg-type]


ATTEMPTS = [
    Attempt(1, BEST | {"epochs": 1}, {"acc": 0.70}),  # one change: an ablation
    Attempt(2, dict(BEST), {"acc": 0.90}),  # the best
    Attempt(3, BEST | {"lr": 0.3}, None),  # one change, but it failed: not graded
    Attempt(4, BEST | {"lr": 0.01, "seed": 1}, {"acc": 0.80}),  # two changes
    Attempt(5, BEST | {"seed": 2}, {"acc": 0.89}),  # one change: an ablation
]


def test_the_body_lists_the_bests_ablations_from_graded_attempts_only() -> None:
    body = _paper(ATTEMPTS, this_round=3)["body"]
    ablations = body.split("## Ablations", 1)[1]
    assert "| 1 | epochs: 10 → 1 | 0.7000 (-0.2000) |" in ablations
    assert "| 5 | seed: 0 → 2 | 0.8900 (-0.0100) |" in ablations
    assert "lr: 0.1 → 0.3" not in ablations and "| 3 |" not in ablations  # failed
    assert "| 4 |" not in ablations  # two changes: not an ablation


def test_the_structured_experiments_carry_the_ablations_of_earlier_rounds() -> None:
    paper = _paper(ATTEMPTS, this_round=2, papers=1)  # attempts 4 and 5: no gain
    assert paper["title"].startswith("Digits: no gain over acc 0.9000")
    assert [e["attempt"] for e in paper["experiments"]] == [2, 1, 4, 5]
    assert "| 1 | epochs: 10 → 1 |" in paper["body"]


def test_a_best_with_no_single_change_says_so() -> None:
    body = _paper([Attempt(1, dict(BEST), {"acc": 0.9})], this_round=1)["body"]
    assert "No graded attempt differs from the best configuration in one parameter." in body


def test_a_change_that_makes_settings_apply_names_them(tmp_path: Path) -> None:
    """`model: ridge → knn` alone would hide which kNN the attempt ran: the row names the
    settings the change brings in (and none that it leaves behind)."""
    bundle = load_bundle(conditional_bundle(tmp_path))
    ridge = STARTER | {"model": "ridge", "alpha": 0.1}  # kNN's settings: the starter's
    attempts = [
        Attempt(1, ridge, {"score": 0.9}),
        Attempt(2, ridge | {"model": "knn"}, {"score": 0.8}),  # alpha no longer applies
        Attempt(3, ridge | {"alpha": 10.0}, {"score": 0.7}),
    ]
    state = SimpleNamespace(
        attempts=attempts,
        attempts_since_paper=lambda: attempts,
        papers=[],
        lab="lab-0",
    )
    body = write_paper(state, bundle, [])["body"]  # type: ignore[arg-type]
    ablations = body.split("## Ablations", 1)[1]
    assert "| 2 | model: ridge → knn (with n_neighbors=5, weights=uniform) |" in ablations
    assert "| 3 | alpha: 0.1 → 10.0 |" in ablations
