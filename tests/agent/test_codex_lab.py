"""Codex CLI, installed from the npm registry, as a lab on continual-digits: its profile,
the run's sandbox, the recording endpoint (the Responses API, streamed) and the `lab`
command, from a shell as a person runs it. The local model server plays the model in
Responses API events (tests/agent/codex_server.py), scripted: read TASK.md, evaluate,
write a paper claiming the score as `lab evaluate` printed it and submit it, (finish,)
end with a final message."""

import itertools
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from events.spend import spend_of_payload
from projections.exports.function_names import function_name
from tests.agent.agent_support import KEY, run_campaign, store_of
from tests.agent.codex_env import codex_prefix
from tests.agent.codex_server import FINAL, MCP_BUDGET, SCORE, CodexResearcher
from tests.exports.agent_export import exported, model_events
from tests.llm.fake_server import FakeServer, Received

NO_RESULT = "(the agent reported no result before it ended)"
"""The result of a reported call whose output no later request carried."""

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]  # the first run installs Codex


@dataclass
class Ran:
    """A Codex lab's run: its events, and what the model server saw and billed."""

    events: list[Any]
    requests: list[Received]
    model: CodexResearcher

    def payloads(self, kind: str) -> list[Any]:
        return [e.payload for e in self.events if e.type == kind]


def codex_lab(tmp_path: Path, finish: bool) -> Ran:
    prefix = codex_prefix()
    model = CodexResearcher(finish=finish)
    with FakeServer(default=model) as server:
        said = run_campaign(
            tmp_path,
            server.url,
            "--labs", "1", "--papers", "1", "--mode", "isolated",
            "--agent", "codex", "--agent-env", str(prefix),
            "--model", "lab-model", "--timeout", "400",
        )  # fmt: skip
        requests = server.responses()
    assert said.returncode == 0, said.stdout[-4000:] + said.stderr[-4000:]
    store = store_of(tmp_path)
    (run,) = {r.stream for r in store.iter_records(types=["run.started"])}
    events = store.read_stream(run)
    store.engine.dispose()
    assert KEY not in json.dumps([e.payload.model_dump(mode="json") for e in events])
    return Ran(events, requests, model)


def assert_recorded(ran: Ran, tmp_path: Path, unanswered: int) -> None:
    """What every Codex lab's log holds: its model calls with the server's bill, its
    shell commands as reported calls (all but the last `unanswered` with the output its
    next request carried, those with none when it ended), the lab calls they made, a
    verified paper."""
    ended = ran.events[-1]
    assert ended.type == "run.finished" and ended.payload.reason == "done", ended.payload
    # Every model call the server answered went to the Responses API and is in the log.
    assert ran.requests and all(r.path == "/v1/responses" for r in ran.requests)
    assert len(ran.requests) == len(ran.model.billed)
    responded = ran.payloads("model.responded")
    assert len(ran.payloads("model.called")) == len(responded) == len(ran.requests)
    # The ledger equals the server's bill, token for token.
    tokens = sum(u["total_tokens"] for u in ran.model.billed)
    assert sum(spend_of_payload(r).tokens for r in responded) == tokens  # type: ignore[union-attr]
    # Its tool calls are reported: shell commands (`exec_command`) and the lab MCP
    # server's `budget` (`mcp__lab.budget`), each with its output as Codex sent it back
    # (for a command a header, then what it printed).
    reported = [p for p in ran.payloads("tool.invoked") if p.reported]
    assert [p.tool for p in reported] == ran.model.tools
    assert MCP_BUDGET in ran.model.tools
    commands = [p.args["cmd"] for p in reported if p.tool == "exec_command"]
    assert commands == ran.model.commands
    returned = {p.call_id: p for p in ran.payloads("tool.returned")}
    outputs = [returned[p.call_id].preview for p in reported]
    answered = [text != NO_RESULT for text in outputs]
    assert answered == [True] * (len(reported) - unanswered) + [False] * unanswered
    assert commands[0] == "cat TASK.md" and "## " in outputs[0]
    (budget,) = [o for p, o in zip(reported, outputs, strict=True) if p.tool == MCP_BUDGET]
    assert "attempts: used 1;" in budget
    # `lab evaluate` ran the grader once (a command still running after 250 ms is polled
    # by `write_stdin` calls, each recorded with what it read); the score it printed is
    # the paper's claim.
    (scored,) = ran.payloads("experiment.scored")
    assert ran.model.tools[1] == "exec_command" and commands[1] == "lab evaluate"
    polls = len(list(itertools.takewhile("write_stdin".__eq__, ran.model.tools[2:])))
    if polls:
        assert "Process running with session ID" in outputs[1]
    shown = SCORE.findall("".join(outputs[1 : 2 + polls]))
    assert shown and int(shown[-1][0]) == scored.attempt == 1
    (paper,) = ran.payloads("paper.submitted")
    assert (paper.claims[0].attempt, paper.claims[0].value) == (1, float(shown[-1][1]))
    # Codex wrote them itself (`apply_patch`): the writes are that call's result.
    (patched,) = [p for p in reported if p.args.get("cmd", "").startswith("apply_patch")]
    written = {f.path for f in returned[patched.call_id].files_written}
    assert written == {"PAPER.md", "claims.json"}
    papers = subprocess.run(
        [str(Path(sys.executable).with_name("labrxiv")), "papers", "show", paper.paper_id,
         "--json"],
        env={"LABRXIV_DATA_DIR": str(tmp_path / "data"), "PATH": "/usr/bin:/bin"},
        capture_output=True, text=True,
    )  # fmt: skip
    assert papers.returncode == 0, papers.stderr
    assert json.loads(papers.stdout)["verified"] == [True]


def assert_exported(ran: Ran, tmp_path: Path) -> None:
    """Its exports hold what Codex was last sent and last answered (streamed Responses
    API answers): every tool it called, in order, by a valid function name
    (`mcp__lab.budget` as `mcp__lab__budget`) in a fine-tuning line OpenAI's types accept,
    and an Inspect model event per call with its input and output."""
    store = store_of(tmp_path)
    try:
        conversation, line = exported(ran.events, store.get_blob)
        shown = model_events(ran.events, store.get_blob)
    finally:
        store.engine.dispose()
    called = [c["function"]["name"] for m in line["messages"] for c in m.get("tool_calls", [])]
    assert called == [function_name(t) for t in ran.model.tools]
    assert "mcp__lab__budget" in called
    declared = {t["function"]["name"] for t in line["tools"]}
    assert set(called) <= declared
    assert conversation.messages[-1] == {"role": "assistant", "content": FINAL}
    assert len(shown) == len(ran.requests)
    assert all(given for given, _ in shown), "every model event has its input"
    outputs = [output["choices"][0]["message"] for _, output in shown]
    assert [c["function"] for o in outputs for c in o.get("tool_calls", [])] == called
    assert shown[-1][1]["completion"] == FINAL


def test_codex_from_npm_runs_a_lab_to_a_verified_paper(tmp_path: Path) -> None:
    ran = codex_lab(tmp_path, finish=False)
    assert_recorded(ran, tmp_path, unanswered=0)
    assert_exported(ran, tmp_path)
    lab = [p.tool for p in ran.payloads("tool.invoked") if not p.reported]
    assert lab == ["evaluate", "submit_paper", "budget"]
    # It ended by itself with its final message, which is the last answer recorded.
    assert ran.payloads("model.responded")[-1].preview == FINAL
    (exited,) = ran.payloads("agent.exited")
    assert exited.exit_code == 0, exited


def test_codex_after_lab_finish_is_refused_its_closing_model_call(tmp_path: Path) -> None:
    ran = codex_lab(tmp_path, finish=True)
    assert_recorded(ran, tmp_path, unanswered=1)
    lab = [p.tool for p in ran.payloads("tool.invoked") if not p.reported]
    assert lab == ["evaluate", "submit_paper", "budget", "finish"]
    # `lab finish` ended the run: Codex's next request (for its closing message) is
    # answered 429 insufficient_quota without reaching the model or the log (so the
    # output of `lab finish` it carried is not reported either), and Codex exits 1
    # saying so. The run is done all the same.
    assert ran.model.commands[-1].startswith("lab finish")
    finished = next(i for i, e in enumerate(ran.events) if e.type == "tool.returned"
                    and e.payload.tool == "finish")  # fmt: skip
    assert not [e for e in ran.events[finished:] if e.type == "model.called"]
    (exited,) = ran.payloads("agent.exited")
    assert exited.exit_code == 1 and "Quota exceeded" in (exited.stderr_tail or ""), exited
