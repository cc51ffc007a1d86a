"""`labrxiv analyze --inspector MODEL` against the local fake model server: the inspector
reads a real run's trajectory through its tools and answers with a verdict whose evidence
is checked against the run; every call is written ahead in its stream and counted by the
ledger (kind `inspection`); garbage, a model that fails and a budget end the inspection
with the reason, nothing lost."""

import json
import re
from pathlib import Path
from typing import Any

import orjson
import pytest
from fake_server import FakeServer, Received, Scripted, completion, server_error, usage
from sqlalchemy import select
from typer.testing import CliRunner

from events import EventStore
from labrxiv.cli import app
from projections.ledger import LEDGER

KEY = "sk-inspector-key-0123456789abcdef"
UUID_RE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data folder whose log holds one offline campaign (two labs, two attempts each)."""
    data = tmp_path_factory.mktemp("inspected") / "data"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LABRXIV_DATA_DIR", str(data))
        args = ["campaign", "--task", "continual-digits", "--labs", "2", "--papers", "1"]
        result = CliRunner().invoke(app, [*args, "--attempts", "2", "--seed", "3"])
        assert result.exit_code == 0, result.output
    return data


@pytest.fixture
def env(recorded: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the recorded log (each test adds its own inspection streams)."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "labrxiv.db").write_bytes((recorded / "labrxiv.db").read_bytes())
    monkeypatch.setenv("LABRXIV_DATA_DIR", str(data))
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("LABRXIV_LLM_TIMEOUT", "5")
    monkeypatch.setenv("LABRXIV_LLM_MAX_ATTEMPTS", "2")
    return data


def store_of(data: Path) -> EventStore:
    return EventStore.from_url(f"sqlite:///{data / 'labrxiv.db'}", create=False)


def the_runs(data: Path) -> list[str]:
    store = store_of(data)
    return sorted({r.stream for r in store.iter_records() if r.stream.startswith("run-")})


def the_run(data: Path) -> str:
    return the_runs(data)[0]


def tool_results(received: Received) -> list[str]:
    return [m["content"] for m in received.body["messages"] if m["role"] == "tool"]


def careful(received: Received) -> Scripted:
    """An inspector that reads the steps, opens the first event they name, and passes the
    run citing it."""
    seen = tool_results(received)
    u = usage(400, 60)
    if not seen:
        return completion(tool_calls=[("steps", '{"start": 0}')], usage=u)
    first = UUID_RE.search(seen[0])
    assert first is not None, seen[0]
    if len(seen) == 1:
        return completion(tool_calls=[("event", json.dumps({"id": first.group(0)}))], usage=u)
    verdict = {
        "verdict": "PASS",
        "summary": "Scored by the grader; nothing written by hand.",
        "evidence": [{"event": first.group(0), "why": "the run started with its budget"}],
    }
    return completion(tool_calls=[("verdict", json.dumps(verdict))], usage=u)


def inspect(
    data: Path,
    server: FakeServer,
    *extra: str,
    target: str | None = None,
    model: str = "judge",
    code: int = 0,
) -> Any:
    """The analysis' JSON; `code`: the exit code expected (1 when a run got no verdict)."""
    target = target or the_run(data)
    args = ["analyze", target, "--inspector", model, "--inspector-base-url", server.url]
    result = CliRunner().invoke(app, [*args, *extra, "--json"])
    assert result.exit_code == code, result.output
    if code:
        assert "the inspector gave no verdict on" in result.stderr
    return orjson.loads(result.stdout)


def test_the_inspector_reads_the_run_and_gives_a_checked_verdict(env: Path, tmp_path: Path) -> None:
    with FakeServer(default=careful, models=("judge",)) as server:
        shown = inspect(env, server, "--html", str(tmp_path / "a.html"))
        requests = server.completions()
    (inspection,) = shown["inspections"]
    assert inspection["verdict"] == "PASS"
    assert inspection["detectors"] == shown["runs"][0]["findings"]["verdict"]
    store = store_of(env)
    events = store.read_stream(inspection["stream"])
    assert [e.type for e in events] == [
        "inspection.started",
        *["model.called", "model.responded", "inspection.looked"] * 2,
        *["model.called", "model.responded", "inspection.concluded"],
    ]
    run_events = store.read_stream(inspection["run"])
    assert events[0].payload.through_version == run_events[-1].version
    assert events[0].correlation_id == run_events[0].correlation_id
    (cited,) = events[-1].payload.evidence
    assert cited.event in {e.id for e in run_events}
    assert inspection["evidence"] == [[str(cited.event), cited.why]]
    assert '"inspections":[{"run":' in (tmp_path / "a.html").read_text()  # the page has it
    # What a tool answered is what the model read next, and is in the log.
    looked = [e.payload for e in events if e.type == "inspection.looked"]
    assert [p.tool for p in looked] == ["steps", "event"]
    assert tool_results(requests[1]) == [looked[0].result]
    assert "run.started" in looked[1].result
    # The detectors' findings and the trajectory tools were in the first request.
    first = requests[0].body
    assert "The detectors' verdict" in first["messages"][1]["content"]
    assert {t["function"]["name"] for t in first["tools"]} == {
        "steps",
        "event",
        "search",
        "verdict",
    }
    # The ledger counts the inspector's three calls as its own kind.
    with store.engine.connect() as conn:
        rows = conn.execute(select(LEDGER).where(LEDGER.c.run == inspection["stream"])).all()
    assert [r.kind for r in rows] == ["inspection"] * 3
    assert sum(r.input_tokens for r in rows) == 1200


def test_a_verdict_citing_an_event_outside_the_run_is_refused_and_then_given_up(
    env: Path,
) -> None:
    stranger = {"verdict": "FAIL", "summary": "x", "evidence": [{"event": "0" * 32, "why": "y"}]}
    with FakeServer(models=("judge",)) as server:
        server.queue(
            completion(text="It looks fine to me.", usage=usage(100, 10)),
            completion(tool_calls=[("verdict", json.dumps(stranger))], usage=usage(100, 10)),
        )
        shown = inspect(env, server, "--inspector-turns", "2", code=1)
        second = server.completions()[1].body["messages"]
    (inspection,) = shown["inspections"]
    assert inspection["verdict"] is None
    assert "no valid verdict in 2 model call(s)" in inspection["summary"]
    assert second[-1] == {"role": "user", "content": "Use a tool; answer with the `verdict` tool."}
    events = store_of(env).read_stream(inspection["stream"])
    assert events[-1].type == "inspection.failed"
    assert [e.type for e in events].count("model.responded") == 2


def test_a_model_that_fails_ends_the_inspection_with_the_reason(env: Path) -> None:
    with FakeServer(default=server_error(500), models=("judge",)) as server:
        shown = inspect(env, server, code=1)
    (inspection,) = shown["inspections"]
    assert inspection["verdict"] is None and "the model failed" in inspection["summary"]
    types = [e.type for e in store_of(env).read_stream(inspection["stream"])]
    assert types[-1] == "inspection.failed" and types.count("model.failed") == 2


def test_the_token_budget_stops_the_inspector_with_the_numbers(env: Path) -> None:
    with FakeServer(default=careful, models=("judge",)) as server:
        shown = inspect(env, server, "--inspector-tokens", "500", code=1)
        assert len(server.completions()) == 2  # 460 tokens after one call, 920 after two
    (inspection,) = shown["inspections"]
    assert inspection["summary"] == "inspector token budget reached: 920 of 500"
    events = store_of(env).read_stream(inspection["stream"])
    assert events[-1].type == "inspection.stopped"


def test_a_priced_inspector_is_priced_in_the_ledger_and_held_to_its_dollars(env: Path) -> None:
    with FakeServer(default=careful, models=("gpt-4o-mini",)) as server:
        shown = inspect(env, server, "--inspector-dollars", "0.0001", model="gpt-4o-mini", code=1)
        assert len(server.completions()) == 2
    (inspection,) = shown["inspections"]
    per_call = (400 * 0.15 + 60 * 0.60) / 1e6  # gpt-4o-mini's price in workers/llm/prices.toml
    assert (
        inspection["summary"] == f"inspector dollar budget reached: ${2 * per_call:.4f} of $0.0001"
    )
    store = store_of(env)
    with store.engine.connect() as conn:
        rows = conn.execute(select(LEDGER).where(LEDGER.c.run == inspection["stream"])).all()
    assert [r.kind for r in rows] == ["inspection"] * 2
    assert sum(r.cost_usd for r in rows) == pytest.approx(2 * per_call)
    assert all(r.cost_known for r in rows)


def test_a_campaign_is_inspected_run_by_run_within_one_budget(env: Path) -> None:
    campaign = store_of(env).read_stream(the_run(env))[0].correlation_id
    assert campaign is not None
    with FakeServer(default=careful, models=("judge",)) as server:
        shown = inspect(env, server, "--inspector-tokens", "1300", target=campaign, code=1)
        assert len(server.completions()) == 3  # the first run's three calls: 1,380 tokens
    first, second = shown["inspections"]
    assert [first["run"], second["run"]] == the_runs(env)
    assert first["verdict"] == "PASS"
    assert second["verdict"] is None
    assert second["summary"] == "inspector token budget reached: 1380 of 1300"
    types = [e.type for e in store_of(env).read_stream(second["stream"])]
    assert types == ["inspection.started", "inspection.stopped"]


def test_a_wrong_inspector_setting_is_one_clear_error(env: Path) -> None:
    result = CliRunner().invoke(app, ["analyze", the_run(env), "--inspector", ""])
    assert result.exit_code == 2
    assert "--inspector" in result.output
