"""`labrxiv reviewers eval`: every figure equals the value computed by hand on a small
fixture (the arithmetic is written out below), and malformed lines are reported with
their line numbers, nothing computed from a file that has any."""

from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from analysis.reviewer_eval import BadLines, HumanPaper, Prediction, evaluate, read_lines
from labrxiv.cli import app

HUMANS = [
    {"id": "P1", "text": "a", "reviews": [{"rating": 6}, {"rating": 8}], "decision": "accept"},
    {"id": "P2", "reviews": [{"rating": 3}, {"rating": 5}, {"rating": 4}], "decision": "reject"},
    {"id": "P3", "reviews": [{"rating": 8, "soundness": 3}], "decision": "accept"},
    {"id": "P4", "reviews": [{"rating": 2}, {"rating": 4}], "decision": "reject"},
    {"id": "P5", "reviews": [{"rating": 5}], "decision": "reject"},  # no prediction
]
PREDICTED = [
    {"id": "P1", "rating": 7},
    {"id": "P2", "rating": 5, "decision": "reject"},
    {"id": "P3", "rating": 6},
    {"id": "P4", "rating": 6},
]
# Mean human ratings 7, 4, 8, 3 against 7, 5, 6, 6.
# MAE (0 + 1 + 2 + 3) / 4; MSE (0 + 1 + 4 + 9) / 4.
# Proxy: each human of a paper with two or more held out against the mean of the others.
#   P1 targets 8, 6: reviewer errors -1, 1; humans' -2, 2.
#   P2 targets 4.5, 3.5, 4: reviewer 0.5, 1.5, 1; humans' -1.5, 1.5, 0.
#   P4 targets 4, 2: reviewer 2, 4; humans' -2, 2.
#   Reviewer: MAE (2 + 3 + 6) / 7, MSE (2 + 3.5 + 20) / 7;
#   humans: MAE (4 + 3 + 4) / 7, MSE (8 + 4.5 + 8) / 7.
# Spearman: ranks (4, 1, 2.5, 2.5) against (3, 2, 4, 1): 1.5 / sqrt(4.5 * 5).
# Decisions said: accept (7 >= 6), reject (given), accept, accept; true: a, r, a, r: 3 of 4.
#   F1 accept: 2 * 2 / (2 * 2 + 1 + 0); reject: 2 * 1 / (2 * 1 + 0 + 1); macro their mean.
# Pairs ordered by the humans: (1,2) agree, (1,3) not, (1,4) agree, (2,3) agree, (2,4) not,
#   (3,4) a tie of the reviewer: half. 3.5 of 6.
EXPECTED = {
    "mae": 1.5,
    "mse": 3.5,
    "proxy_mae": 11 / 7,
    "proxy_mse": 25.5 / 7,
    "human_proxy_mae": 11 / 7,
    "human_proxy_mse": 20.5 / 7,
    "spearman": 1.5 / (4.5 * 5) ** 0.5,
    "decision_accuracy": 0.75,
    "decision_macro_f1": (0.8 + 2 / 3) / 2,
    "pairwise_accuracy": 3.5 / 6,
}


def jsonl(rows: list[dict]) -> str:
    return "\n".join(orjson.dumps(r).decode() for r in rows) + "\n"


def test_every_figure_equals_the_hand_computed_value() -> None:
    humans = [HumanPaper.model_validate(h) for h in HUMANS]
    said = [Prediction.model_validate(p) for p in PREDICTED]
    result = evaluate(humans, said, resamples=200)
    assert result.papers == 4 and result.missing == ("P5",)
    for name, value in EXPECTED.items():
        figure = getattr(result, name)
        assert figure.value == pytest.approx(value), name
        assert figure.low is not None and figure.high is not None, name
        assert figure.low <= figure.high, name
    again = evaluate(humans, said, resamples=200)
    assert again == result  # the bootstrap is seeded


def test_the_command_prints_and_writes_the_same_figures(tmp_path: Path) -> None:
    (tmp_path / "h.jsonl").write_text(jsonl(HUMANS))
    (tmp_path / "p.jsonl").write_text(jsonl(PREDICTED))
    args = ["reviewers", "eval", "--data", str(tmp_path / "h.jsonl")]
    args += ["--predictions", str(tmp_path / "p.jsonl"), "--resamples", "100"]
    shown = CliRunner().invoke(app, args)
    assert shown.exit_code == 0, shown.output
    assert "1.5714" in shown.output and "0.5833" in shown.output
    assert "1 paper(s) with no prediction left out" in shown.output
    written = CliRunner().invoke(app, [*args, "--json"])
    assert written.exit_code == 0, written.output
    figures = orjson.loads(written.output)["humans"]
    for name, value in EXPECTED.items():
        assert figures[name]["value"] == pytest.approx(value), name


def test_malformed_lines_are_reported_with_their_numbers(tmp_path: Path) -> None:
    lines = jsonl(HUMANS).splitlines()
    lines[1] = '{"id": "P2", "reviews": [{"rating": 11}], "decision": "reject"}'
    lines[3] = "not json"
    lines.insert(4, "")  # a blank line is no line
    lines.append('{"id": "P6", "reviews": [], "decision": "maybe"}')
    text = "\n".join(lines)
    with pytest.raises(BadLines) as caught:
        read_lines("h.jsonl", text, HumanPaper)
    assert [n for n, _ in caught.value.problems] == [2, 4, 7]
    assert "reviews.0.rating" in caught.value.problems[0][1]
    (tmp_path / "h.jsonl").write_text(text)
    (tmp_path / "p.jsonl").write_text(jsonl(PREDICTED))
    args = ["reviewers", "eval", "--data", str(tmp_path / "h.jsonl")]
    result = CliRunner().invoke(app, [*args, "--predictions", str(tmp_path / "p.jsonl")])
    assert result.exit_code == 1
    assert "3 malformed line(s): line 2:" in result.output and "line 7:" in result.output
    assert "MAE" not in result.output
