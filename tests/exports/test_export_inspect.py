"""`labrxiv export inspect` read back by Inspect AI's own reader (`read_eval_log`, in a
virtualenv the test builds: Inspect AI is no dependency of labrxiv): one sample per run,
its messages what the model server was last sent and last answered, each model event's
input what that call sent, its usage the ledger's, its scores and metadata the read
models'."""

from pathlib import Path
from typing import Any

import orjson
import pytest
from export_logged import MODEL, Logged
from inspect_env import run_in_inspect
from typer.testing import CliRunner

from events.payloads import ToolInvoked, ToolReturned
from labrxiv.cli import app
from projections.findings import findings_of
from projections.ledger import ledger_totals
from projections.runs import runs_of

pytestmark = pytest.mark.timeout(1200)  # the first run installs Inspect AI

READER = """
import json, os, sys
from inspect_ai.log import list_eval_logs, read_eval_log, read_eval_log_sample_summaries

def message(m):
    calls = [
        {"id": c.id, "function": c.function, "arguments": c.arguments}
        for c in (getattr(m, "tool_calls", None) or [])
    ]
    return {
        "role": m.role,
        "text": m.text,
        "tool_calls": calls,
        "tool_call_id": getattr(m, "tool_call_id", None),
    }

log = read_eval_log(sys.argv[1])
listed = list_eval_logs(os.path.dirname(sys.argv[1]))
print(json.dumps({
    "listed": [os.path.basename(info.name) for info in listed],
    "summaries": [s.id for s in read_eval_log_sample_summaries(sys.argv[1])],
    "status": log.status,
    "task": log.eval.task,
    "model": log.eval.model,
    "usage": {k: v.model_dump() for k, v in log.stats.model_usage.items()},
    "reductions": sorted(r.scorer for r in log.reductions or []),
    "samples": [
        {
            "id": s.id,
            "input": s.input,
            "messages": [message(m) for m in s.messages],
            "usage": {k: v.model_dump() for k, v in s.model_usage.items()},
            "scores": {k: v.value for k, v in (s.scores or {}).items()},
            "metadata": s.metadata,
            "events": [e.event for e in s.events],
            "model_inputs": [
                [message(m) for m in e.input] for e in s.events if e.event == "model"
            ],
            "tools": [[e.function, e.error is None] for e in s.events if e.event == "tool"],
            "output": s.output.completion,
        }
        for s in log.samples
    ],
}))
"""


def expected_message(m: dict[str, Any]) -> dict[str, Any]:
    """An OpenAI chat message as the reader above describes an Inspect one."""
    content = m.get("content")
    text = content if isinstance(content, str) else ""
    calls = [
        {
            "id": c["id"],
            "function": c["function"]["name"],
            "arguments": orjson.loads(c["function"]["arguments"]),
        }
        for c in m.get("tool_calls") or []
    ]
    return {
        "role": m["role"],
        "text": text,
        "tool_calls": calls,
        "tool_call_id": m.get("tool_call_id"),
    }


def export(logged: Logged, out: Path, *args: str) -> tuple[int, str]:
    env = {"LABRXIV_DATA_DIR": str(logged.data_dir)}
    said = CliRunner().invoke(app, ["export", "inspect", *args, "--out", str(out)], env=env)
    return said.exit_code, said.output


def test_inspect_reads_the_runs_as_the_log_has_them(logged: Logged, tmp_path: Path) -> None:
    out = tmp_path / "campaign.eval"
    code, said = export(logged, out, "--campaign", logged.llm_campaign)
    assert code == 0, said
    log = run_in_inspect(READER, str(out))
    store = logged.store()
    with store.engine.connect() as conn:
        runs = runs_of(conn, campaign=logged.llm_campaign)
        totals = {t.key: t for t in ledger_totals(conn, "run", campaign=logged.llm_campaign)}
        verdicts = findings_of(conn, campaign=logged.llm_campaign)
    assert [s["id"] for s in log["samples"]] == [r.stream for r in runs] == [logged.llm_run]
    assert log["status"] == "success" and log["task"] == "continual-digits"
    assert log["model"] == MODEL
    # what `inspect view` lists: the file among the folder's logs, its samples' summaries
    assert log["listed"] == [out.name] and log["summaries"] == [logged.llm_run]
    (sample,) = log["samples"]
    (run,) = runs

    # messages: the last request the server got, then its last answer
    last_request = logged.received[-1].body["messages"]
    last_answer = logged.last_answer
    assert sample["messages"] == [expected_message(m) for m in [*last_request, last_answer]]
    assert any(m["tool_calls"] for m in sample["messages"][:-1])
    assert any(m["role"] == "tool" for m in sample["messages"])
    assert sample["input"] == next(m["content"] for m in last_request if m["role"] == "user")

    # a model event per call, its input what that call sent
    sent = [[expected_message(m) for m in r.body["messages"]] for r in logged.received]
    assert sample["model_inputs"] == sent
    events = store.read_stream(logged.llm_run)
    returned = [e.payload.tool for e in events if isinstance(e.payload, ToolReturned)]
    assert [name for name, _ in sample["tools"]] == returned
    assert sample["events"].count("score") == run.attempts
    # every log event is one Inspect event, a call's two (asked, answered) one together
    pairs = sample["events"].count("model") + sample["events"].count("tool")
    assert len(sample["events"]) + pairs == len(events)

    # usage: the ledger's, and what the server reported
    ledger = totals[logged.llm_run]
    reported = [logged.reported(i)["usage"] for i in range(len(logged.answers))]
    for usage in (sample["usage"][MODEL], log["usage"][MODEL]):
        assert usage["input_tokens"] == ledger.input_tokens
        assert usage["input_tokens"] == sum(u["prompt_tokens"] for u in reported)
        assert usage["output_tokens"] == ledger.output_tokens
        assert usage["output_tokens"] == sum(u["completion_tokens"] for u in reported)
        assert usage["total_tokens"] == ledger.tokens
        assert usage["input_tokens_cache_read"] == ledger.cached_input_tokens
        assert usage["reasoning_tokens"] == ledger.reasoning_tokens
        assert usage["total_cost"] == pytest.approx(ledger.dollars)
    unknown = {MODEL: ledger.unknown_cost_calls} if ledger.unknown_cost_calls else {}
    assert sample["metadata"]["unknown_cost_calls"] == unknown

    # scores and metadata: the read models'
    assert sample["scores"]["best_score"] == run.best_score
    assert sample["scores"]["verdict"] == verdicts[logged.llm_run].verdict
    assert log["reductions"] == ["best_score", "verdict"]
    metadata = sample["metadata"]
    assert (metadata["run"], metadata["lab"], metadata["task"]) == (run.stream, run.lab, run.task)
    assert (metadata["policy"], metadata["status"]) == ("llm", "finished")


def test_a_search_run_is_a_sample_of_tool_calls(logged: Logged, tmp_path: Path) -> None:
    out = tmp_path / "search.eval"
    code, said = export(logged, out, "--campaign", logged.search_campaign)
    assert code == 0, said
    (sample,) = run_in_inspect(READER, str(out))["samples"]
    events = logged.store().read_stream(sample["id"])
    invoked = [e.payload for e in events if isinstance(e.payload, ToolInvoked)]
    assert sample["usage"] == {} and sample["model_inputs"] == []
    assert [name for name, _ in sample["tools"]] == [call.tool for call in invoked]
    calls = [m for m in sample["messages"] if m["role"] == "assistant"]
    results = [m for m in sample["messages"] if m["role"] == "tool"]
    assert [c["tool_calls"][0]["id"] for c in calls] == [call.call_id for call in invoked]
    assert [r["tool_call_id"] for r in results] == [call.call_id for call in invoked]
    assert [c["tool_calls"][0]["arguments"] for c in calls] == [call.args for call in invoked]


@pytest.mark.parametrize(
    ("args", "told"),
    [
        (["--run", "nosuchrun"], "no run nosuchrun"),
        (["--campaign", "ffffffffffff"], "no campaign ffffffffffff"),
        ([], "give --run or --campaign"),
    ],
)
def test_what_names_nothing_is_said_in_one_line(
    logged: Logged, tmp_path: Path, args: list[str], told: str
) -> None:
    code, said = export(logged, tmp_path / "x.eval", *args)
    assert code != 0 and told in " ".join(said.split()), said
    assert "Traceback" not in said and not (tmp_path / "x.eval").exists()


def test_a_file_that_cannot_be_written_is_named(logged: Logged, tmp_path: Path) -> None:
    """A missing folder is made (`test_cli_errors`); a file where it should be is said."""
    (tmp_path / "afile").write_text("a file, not a folder")
    out = tmp_path / "afile" / "x.eval"
    code, said = export(logged, out, "--run", logged.llm_run)
    told = f"cannot write {out}: {tmp_path / 'afile'} is not a folder"
    assert code == 1 and told in " ".join(said.split()), said


@pytest.mark.parametrize("name", ["x.json", "x", "x.eval.zip"])
def test_a_file_inspect_would_not_read_as_this_format_is_refused(
    logged: Logged, tmp_path: Path, name: str
) -> None:
    """Inspect reads a log by its name's ending: a `.json` one must be JSON, and the
    export writes the `.eval` format (a zip), so any other name would not open."""
    code, said = export(logged, tmp_path / name, "--run", logged.llm_run)
    assert code == 2 and "name the file" in " ".join(said.split()) and ".eval" in said, said
    assert not (tmp_path / name).exists()
