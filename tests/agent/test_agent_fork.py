"""`labrxiv fork RUN --at K` of an agent run: the agent starts again on the starter
workspace, its parent's calls up to the fork point answered from the log (no model call,
no tool run, nothing recorded again), then goes on live; a call that differs from the
recorded one is a divergence, recorded, and live from there."""

from pathlib import Path

import pytest
from sqlalchemy.engine import Engine

from events.payloads import AgentDiverged
from events.recorded import Fact
from projections.ledger import ledger_totals
from runstate.fork import fold_standing, loader
from runstate.trajectory import steps
from tests.agent.agent_support import (
    USAGE,
    mcp_agent_campaign,
    researcher,
    run_labrxiv,
    store_of,
)
from tests.llm.fake_server import FakeServer
from workers.agent.replay import LabAnswer, ModelAnswer, Replay, json_difference

TOKENS = sum(USAGE)
"""Tokens of each scripted answer."""


@pytest.fixture
def parent(tmp_path: Path) -> tuple[str, int]:
    """An agent run to its paper (evaluate, evaluate, submit, finish: four model calls),
    and the step (replay's numbering) of its second answer."""
    with FakeServer(default=researcher(attempts=2), models=("gpt-4o-mini",)) as server:
        said = mcp_agent_campaign(tmp_path, server.url)
    assert said.returncode == 0, said.stdout[-3000:] + said.stderr[-3000:]
    store = store_of(tmp_path)
    try:
        (run,) = {r.stream for r in store.iter_records(types=["run.started"])}
        taken = [s for s, _ in steps(store.read_stream(run))]
    finally:
        store.engine.dispose()
    answered = [s.number for s in taken if "model.responded" in s.types]
    assert len(answered) == 4, [s.types for s in taken]
    return run, answered[1]


def _fork(tmp_path: Path, run: str, at: int, server: FakeServer, *options: str) -> str:
    """Fork `run` after step `at` onto `server`; the fork's stream."""
    said = run_labrxiv(
        tmp_path, server.url, "fork", run, "--at", str(at), "--base-url", server.url,
        "--timeout", "200", *options,
    )  # fmt: skip
    assert said.returncode == 0, said.stdout[-3000:] + said.stderr[-3000:]
    store = store_of(tmp_path)
    try:
        (fork,) = {r.stream for r in store.iter_records(types=["run.started"])} - {run}
    finally:
        store.engine.dispose()
    return fork


def _own_spend(engine: Engine, run: str) -> tuple[int, int]:
    """The ledger's model calls and tokens of `run` (its own calls only)."""
    with engine.connect() as conn:
        (totals,) = [t for t in ledger_totals(conn, "run") if t.key == run]
    return totals.model_calls, totals.tokens


def _lab_tools(events: list[Fact]) -> list[str]:
    return [e.payload.tool for e in events if e.type == "tool.invoked" and not e.payload.reported]


def test_a_fork_replays_its_parents_calls_from_the_log_then_goes_on_live(
    tmp_path: Path, parent: tuple[str, int]
) -> None:
    run, at = parent
    with FakeServer(default=researcher(attempts=2), models=("gpt-4o-mini",)) as fresh:
        fork = _fork(tmp_path, run, at, fresh)
        requests = fresh.completions()
    store = store_of(tmp_path)
    try:
        own = store.read_stream(fork)
        standing = fold_standing(own, loader(store))
        calls, tokens = _own_spend(store.engine, fork)
    finally:
        store.engine.dispose()
    types = [e.type for e in own]
    assert own[-1].type == "run.finished" and own[-1].payload.reason == "done", own[-1].payload
    assert "agent.diverged" not in types
    started = next(e.payload for e in own if e.type == "agent.started")
    assert "first 2 model calls" in started.detail
    # R = 2 answered from the log: the fresh server saw only the two calls after them,
    # and the first of those carries the replayed conversation (two scores to come).
    assert len(requests) == types.count("model.called") == types.count("model.responded") == 2
    assert len([m for m in requests[0].body["messages"] if m["role"] == "tool"]) == 2
    # The replayed evaluate ran no tool: the fork's one attempt is its own, the 2nd.
    assert _lab_tools(own) == ["evaluate", "submit_paper", "finish"]
    assert [e.payload.attempt for e in own if e.type == "experiment.scored"] == [2]
    # The 2nd answer's reported call came after the fork point: recorded once, here.
    reported = [e.payload.tool for e in own if e.type == "tool.invoked" and e.payload.reported]
    assert reported == ["evaluate", "evaluate", "submit_paper", "finish"][1:]
    # Its own ledger holds its live calls; its budgets count the whole trajectory.
    assert (calls, tokens) == (2, 2 * TOKENS)
    assert len(standing.calls) == 4 and standing.spend.tokens == 4 * TOKENS


def test_a_request_that_differs_from_the_parents_is_a_divergence_and_goes_live(
    tmp_path: Path, parent: tuple[str, int]
) -> None:
    run, at = parent
    with FakeServer(default=researcher(attempts=2), models=("gpt-4o-mini",)) as fresh:
        # Another attempts budget: TASK.md, the first request's first message, differs.
        fork = _fork(tmp_path, run, at, fresh, "--attempts", "5")
        requests = fresh.completions()
    store = store_of(tmp_path)
    try:
        own = store.read_stream(fork)
        calls, tokens = _own_spend(store.engine, fork)
    finally:
        store.engine.dispose()
    assert own[-1].type == "run.finished" and own[-1].payload.reason == "done", own[-1].payload
    (diverged,) = [e.payload for e in own if isinstance(e.payload, AgentDiverged)]
    assert (diverged.call, diverged.kind, diverged.model_calls, diverged.lab_calls) == (
        1,
        "model",
        0,
        0,
    )
    assert ".messages[0].content" in diverged.detail
    first_call = next(e.version for e in own if e.type == "model.called")
    assert next(e.version for e in own if e.type == "agent.diverged") < first_call
    # Live from its first call: every call made and recorded, every tool run.
    assert len(requests) == 4 and (calls, tokens) == (4, 4 * TOKENS)
    assert _lab_tools(own) == ["evaluate", "evaluate", "submit_paper", "finish"]
    assert [e.payload.attempt for e in own if e.type == "experiment.scored"] == [2, 3]


def test_the_replay_answers_in_order_and_tells_where_a_call_differs() -> None:
    request = b'{"model": "m", "messages": [{"role": "user", "content": "go"}]}'
    replay = Replay(
        [
            ModelAnswer(request, b"{}", "r:agent:1"),
            LabAnswer("evaluate", {}, "attempt 1: final_accuracy=0.5", 0),
            ModelAnswer(request, b"{}", "r:agent:2"),
        ],
        set(),
    )
    assert replay.model_calls == 2
    same = b'{"messages": [{"content": "go", "role": "user"}], "model": "m"}'
    assert isinstance(replay.model(same), ModelAnswer)  # the keys' order does not count
    assert isinstance(replay.lab("evaluate", {}), LabAnswer)
    diverged = replay.model(b'{"model": "m", "messages": [{"role": "user", "content": "no"}]}')
    assert isinstance(diverged, AgentDiverged)
    assert (diverged.call, diverged.kind, diverged.model_calls, diverged.lab_calls) == (
        3,
        "model",
        1,
        1,
    )
    assert diverged.detail.endswith('.messages[0].content is "no", not "go"')
    assert replay.live and replay.model(same) is None and replay.lab("evaluate", {}) is None
    other = Replay([LabAnswer("evaluate", {}, "", 0)], set())
    diverged = other.lab("finish", {"summary": "done"})
    assert isinstance(diverged, AgentDiverged) and "parent called evaluate" in diverged.detail
    assert json_difference({"a": [1, 2]}, {"a": [1]}) == ".a has 1 items, not 2"
    assert json_difference({"a": 1}, {"b": 1}) == ".a is missing"
    assert json_difference({"a": 1}, {"a": True}) == ".a is true, not 1"
    assert json_difference({"a": 1}, {"a": 1}) == ""
