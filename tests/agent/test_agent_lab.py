"""Agent labs run for real: an agent process in the run's sandbox, its model calls
through the recording endpoint, its tools through the lab socket, all in the log."""

import json
from pathlib import Path

from tests.agent.agent_support import KEY, USAGE, mcp_agent_campaign, researcher, store_of
from tests.llm.fake_server import FakeServer


def test_a_function_calling_agent_on_the_mcp_tools_runs_a_lab_to_a_verified_paper(
    tmp_path: Path,
) -> None:
    with FakeServer(default=researcher(attempts=2), models=("gpt-4o-mini",)) as server:
        said = mcp_agent_campaign(tmp_path, server.url)
        requests = server.completions()
    assert said.returncode == 0, said.stdout[-3000:] + said.stderr[-3000:]
    for noise in ("Traceback", "dead letter", "WARNING", "ERROR"):
        assert noise not in said.stdout + said.stderr, said.stderr[-3000:]
    store = store_of(tmp_path)
    (run,) = {r.stream for r in store.iter_records(types=["run.started"])}
    events = store.read_stream(run)
    store.engine.dispose()
    types = [e.type for e in events]
    ended = events[-1]
    assert ended.type == "run.finished" and ended.payload.reason == "done", ended.payload
    assert "agent.started" in types and "agent.exited" in types
    # Every request the server saw is a recorded call, with the server's bill.
    responded = [e.payload for e in events if e.type == "model.responded"]
    assert len(requests) == len(responded) == types.count("model.called") == 4
    assert sum(r.usage.input_tokens for r in responded if r.usage) == USAGE[0] * len(requests)
    # The lab calls are the built-in tools; the agent's tool calls are reported beside.
    lab = [e.payload.tool for e in events if e.type == "tool.invoked" and not e.payload.reported]
    told = [e.payload.tool for e in events if e.type == "tool.invoked" and e.payload.reported]
    assert lab == ["evaluate", "evaluate", "submit_paper", "finish"]
    assert told == ["evaluate", "evaluate", "submit_paper", "finish"]
    scored = [e.payload for e in events if e.type == "experiment.scored"]
    assert [s.attempt for s in scored] == [1, 2]  # reported calls are no attempts
    assert "finished; the agent exited with 0" in ended.payload.detail
    (paper,) = [e.payload for e in events if e.type == "paper.submitted"]
    assert paper.claims[0].value == float(f"{scored[-1].score:.4g}")
    # The key went to the provider, and nowhere else.
    assert {r.headers["authorization"] for r in requests} == {f"Bearer {KEY}"}
    assert KEY not in json.dumps([e.payload.model_dump(mode="json") for e in events])
