"""`labrxiv export finetune`: each line is OpenAI's chat fine-tuning format, checked with
the `openai` package's own types (each message by its role's param type, no key the
type lacks; each tool a function tool); a model's run is what its server was last sent
and last answered, a search run its tool calls; every tool result answers a call before
it; the verdict and score filters keep what the read models say they should."""

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import orjson
import pytest
from export_logged import Logged
from typer.testing import CliRunner

from events.payloads import ToolInvoked
from labrxiv.cli import app
from projections.exports import finetune
from projections.findings import findings_of
from projections.runs import runs_of
from tests.exports.finetune_format import paired, validate
from workers.tools.base import TOOLS


def export(logged: Logged, out: Path, *args: str) -> tuple[int, str, list[dict[str, Any]]]:
    env = {"LABRXIV_DATA_DIR": str(logged.data_dir)}
    said = CliRunner().invoke(app, ["export", "finetune", *args, "--out", str(out)], env=env)
    lines = [orjson.loads(x) for x in out.read_bytes().splitlines()] if out.exists() else []
    return said.exit_code, said.output, lines


def test_a_model_run_is_its_last_request_and_answer(logged: Logged, tmp_path: Path) -> None:
    code, said, lines = export(logged, tmp_path / "llm.jsonl", "--run", logged.llm_run)
    assert code == 0, said
    (line,) = lines
    validate(line)
    paired(line["messages"])
    last_request = logged.received[-1].body["messages"]
    last_answer = logged.last_answer
    assert line["messages"] == [*last_request, last_answer]
    assert any(m["role"] == "tool" for m in line["messages"])
    declared = {t["function"]["name"]: t for r in logged.received for t in r.body["tools"]}
    assert sorted(t["function"]["name"] for t in line["tools"]) == sorted(declared)
    called = {c["function"]["name"] for m in line["messages"] for c in m.get("tool_calls", [])}
    assert called <= set(declared), "every tool called is declared"


def test_a_search_run_is_its_tool_calls(logged: Logged, tmp_path: Path) -> None:
    out = tmp_path / "search.jsonl"
    code, said, lines = export(logged, out, "--campaign", logged.search_campaign)
    assert code == 0, said
    (line,) = lines
    validate(line)
    paired(line["messages"])
    store = logged.store()
    with store.engine.connect() as conn:
        (run,) = runs_of(conn, campaign=logged.search_campaign)
    invoked = [
        e.payload for e in store.read_stream(run.stream) if isinstance(e.payload, ToolInvoked)
    ]
    calls = [m["tool_calls"][0] for m in line["messages"] if m["role"] == "assistant"]
    assert [c["id"] for c in calls] == [call.call_id for call in invoked]
    assert [orjson.loads(c["function"]["arguments"]) for c in calls] == [i.args for i in invoked]
    names = {t["function"]["name"]: t["function"] for t in line["tools"]}
    assert set(names) == {call.tool for call in invoked}
    assert names["evaluate"] == TOOLS["evaluate"].schema()["function"], "the tool's own"


def test_the_filters_keep_the_runs_they_name(logged: Logged, tmp_path: Path) -> None:
    store = logged.store()
    with store.engine.connect() as conn:
        (run,) = runs_of(conn, campaign=logged.llm_campaign)
        verdict = findings_of(conn, run=run.stream)[run.stream].verdict
    assert run.best_score is not None
    campaign = ("--campaign", logged.llm_campaign)
    cases = [
        (["--verdict", verdict], 1),
        (["--verdict", verdict.lower(), "--verdict", "PASS"], 1),
        *[(["--verdict", other], 0) for other in {"PASS", "SUSPICIOUS", "FAIL"} - {verdict}],
        (["--min-score", str(run.best_score)], 1),
        (["--min-score", str(run.best_score + 0.01)], 0),
        (["--min-score", str(run.best_score + 0.01), "--verdict", verdict], 0),
    ]
    for number, (args, kept) in enumerate(cases):
        code, said, lines = export(logged, tmp_path / f"{number}.jsonl", *campaign, *args)
        assert code == 0, said
        assert len(lines) == kept, (args, said)


@pytest.mark.parametrize(
    ("args", "told"),
    [
        (["--verdict", "GOOD"], "no verdict GOOD"),
        (["--min-score", "nan"], "must be a finite number"),
        (["--run", "x", "--campaign", "y"], "give --run or --campaign"),
        (["--run", "nosuchrun"], "no run nosuchrun"),
    ],
)
def test_bad_options_are_said_in_one_line(
    logged: Logged, tmp_path: Path, args: list[str], told: str
) -> None:
    out = tmp_path / "x.jsonl"
    code, said, _ = export(logged, out, *args)
    assert code != 0 and told in " ".join(said.split()), said
    assert "Traceback" not in said and not out.exists()


@pytest.mark.parametrize(
    ("best", "direction", "reached"),
    [
        (0.9, "maximize", True),
        (0.8, "maximize", True),
        (0.7, "maximize", False),
        (2.0, "minimize", True),  # an error of 2.0 is better than one of 2.5
        (2.5, "minimize", True),
        (3.0, "minimize", False),
    ],
)
def test_min_score_is_reached_in_the_best_scores_direction(
    best: float, direction: str, reached: bool
) -> None:
    minimum = 0.8 if direction == "maximize" else 2.5
    run = SimpleNamespace(
        verdict=None, view=SimpleNamespace(best_score=best, best_direction=direction)
    )
    assert bool(finetune.kept([run], min_score=minimum)) == reached  # type: ignore[list-item]
