"""Normalization is stated once, in docs/tasks.md, as `workers.gym.scoring.normalized`
computes it; what else describes a normalized score points there and does not say
`score / SOTA` for every direction."""

import re
from pathlib import Path

import pytest

from labrxiv.plots import Y_LABEL
from workers.gym.card import Subtask
from workers.gym.scoring import normalized

DOCS = Path(__file__).resolve().parents[2] / "docs"


def formulas() -> dict[str, str]:
    section = (DOCS / "tasks.md").read_text().split("## Normalized scores", 1)[1]
    section = section.split("\n## ", 1)[0]
    rows = re.findall(r"^\| `(\w+)` \| ([^|]+) \|", section, re.MULTILINE)
    return {direction: formula.strip() for direction, formula in rows}


@pytest.mark.parametrize(
    ("direction", "baseline", "sota", "score"),
    [("maximize", 0.4, 0.9, 0.6), ("minimize", 0.3, 0.05, 0.1), ("minimize", 40.0, 10.0, 25.0)],
)
def test_the_documented_formula_is_the_computed_one(
    direction: str, baseline: float, sota: float, score: float
) -> None:
    subtask = Subtask(
        name="s",
        metric="m",
        direction=direction,
        baseline=baseline,
        sota=sota,  # type: ignore[arg-type]
    )
    formula = formulas()[direction]
    expression = formula.replace("−", "-").replace("SOTA", "sota")
    documented = eval(expression, {}, {"score": score, "baseline": baseline, "sota": sota})  # noqa: S307
    assert normalized(subtask, score) == pytest.approx(documented)


def test_nothing_else_calls_every_normalized_score_score_over_sota() -> None:
    assert set(formulas()) == {"maximize", "minimize"}
    events = (DOCS / "events.md").read_text()
    [row] = [line for line in events.splitlines() if line.startswith("| `normalized_score` |")]
    assert "(baseline − score) / (baseline − SOTA)" in row
    assert "score / SOTA" not in Y_LABEL
