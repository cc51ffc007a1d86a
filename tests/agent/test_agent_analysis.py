"""An agent run read back: `labrxiv replay` and `labrxiv analyze` show its steps (model
calls, the calls it reported, marked, the lab calls labrxiv ran, its process, the files
it changed), the behaviour figures count each action once (`events.actions`), and every
detector runs on it. One real agent campaign for the module; hand-built logs for what
the scripted agent does not do (a reported bash command, changes no call carried)."""

import hashlib
import json
import os
import subprocess
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from analysis.behaviour import behaviour
from analysis.detectors import DETECTORS, detect
from analysis.detectors.view import read_run
from analysis.inspection_tools import Trajectory
from events import Event
from events.actions import LAB_CALL_NAMES, is_action
from events.payloads import (
    AgentConfig,
    AgentExited,
    AgentStarted,
    Claim,
    FileDigest,
    PaperSubmitted,
    ToolInvoked,
    ToolReturned,
    WorkspaceChanged,
)
from projections.metrics import Bounds, research_metrics
from runstate.trajectory import steps
from tests.agent.agent_support import (
    LABRXIV,
    USAGE,
    agent_folder,
    mcp_agent_campaign,
    researcher,
    run_campaign,
    store_of,
)
from tests.analysis.runlog import RunLog, sha
from tests.llm.fake_server import FakeServer, completion, usage


@dataclass(frozen=True)
class AgentRun:
    data: Path
    run: str
    events: list[Event]

    @property
    def lab(self) -> list[str]:
        """The tools of the lab calls labrxiv ran, in order."""
        return [p.tool for p in self._invoked() if not p.reported]

    @property
    def told(self) -> list[str]:
        """The tools of the calls the agent reported, in order."""
        return [p.tool for p in self._invoked() if p.reported]

    @property
    def model_calls(self) -> int:
        return sum(e.type == "model.called" for e in self.events)

    def _invoked(self) -> list[ToolInvoked]:
        return [e.payload for e in self.events if isinstance(e.payload, ToolInvoked)]


@pytest.fixture(scope="module")
def agent_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AgentRun]:
    """A function-calling agent's run on the MCP tools: two evaluations, a paper, finish."""
    tmp = tmp_path_factory.mktemp("agent-analysis")
    with FakeServer(default=researcher(attempts=2), models=("gpt-4o-mini",)) as server:
        said = mcp_agent_campaign(tmp, server.url)
    assert said.returncode == 0, said.stdout[-3000:] + said.stderr[-3000:]
    store = store_of(tmp)
    (run,) = {r.stream for r in store.iter_records(types=["run.started"])}
    events = store.read_stream(run)
    store.engine.dispose()
    yield AgentRun(tmp / "data", run, events)


@pytest.fixture(scope="module")
def shell_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AgentRun]:
    """A shell agent's run (`script_agent.py`, its commands reported as bash blocks): one
    command that writes a file and runs `lab evaluate`, then `lab finish`."""
    tmp = tmp_path_factory.mktemp("shell-analysis")
    folder = agent_folder(tmp, "script_agent.py")
    with FakeServer(models=("gpt-4o-mini",)) as server:
        server.queue(
            completion(text=f"```bash\n{PLAN_AND_EVALUATE}\n```", usage=usage(*USAGE)),
            completion(text="```bash\nlab finish measured\n```", usage=usage(*USAGE)),
        )
        said = run_campaign(
            tmp,
            server.url,
            "--labs", "1", "--papers", "1", "--mode", "isolated",
            "--agent", f"python {folder}/script_agent.py",
            "--agent-env", str(folder),
            "--agent-reports", "bash_blocks",
            "--model", "gpt-4o-mini",
            "--timeout", "200",
        )  # fmt: skip
    assert said.returncode == 0, said.stdout[-3000:] + said.stderr[-3000:]
    store = store_of(tmp)
    (run,) = {r.stream for r in store.iter_records(types=["run.started"])}
    events = store.read_stream(run)
    store.engine.dispose()
    yield AgentRun(tmp / "data", run, events)


PLAN_AND_EVALUATE = "echo '# plan' > notes.md && lab evaluate"


def labrxiv(data: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LABRXIV_", "OPENAI_"))}
    env |= {"LABRXIV_DATA_DIR": str(data), "COLUMNS": "200", "NO_COLOR": "1"}
    said = subprocess.run(
        [str(LABRXIV), *args], env=env, capture_output=True, text=True, timeout=120
    )
    assert said.returncode == 0, said.stdout[-3000:] + said.stderr[-3000:]
    return said.stdout


def test_replay_shows_the_agents_steps_with_its_reported_calls_marked(agent_run: AgentRun) -> None:
    shown = labrxiv(agent_run.data, "replay", agent_run.run)
    assert "(agent) marks a call the agent's own tool ran" in shown
    assert "agent started (session 1): python " in shown
    assert "agent exited with 0 after" in shown
    assert "model.called" in shown and "model.responded" in shown
    assert "phase" not in shown.splitlines()[2]  # no research phases: no phase column
    lines = shown.splitlines()
    evaluations = agent_run.lab.count("evaluate")
    # each evaluation the agent asked for, then its answer; and the call labrxiv ran
    assert sum("(agent) evaluate" in line for line in lines) == 2 * agent_run.told.count("evaluate")
    assert sum(" evaluate {}" in line and "(agent)" not in line for line in lines) == evaluations
    taken = list(steps(agent_run.events))
    answered = [a for s, _ in taken for a in s.actions if a.exit_code is not None]
    # each reported result is its own call's (the server reuses its call ids)
    results = [a.result[:10] for a in answered if a.reported and a.tool == "evaluate"]
    ran = [a.result[:10] for a in answered if not a.reported and a.tool == "evaluate"]
    assert len(results) >= 2 and len(set(results)) == len(results) and set(results) <= set(ran)


def test_replay_json_keeps_the_reported_mark_and_the_notes(agent_run: AgentRun) -> None:
    document = json.loads(labrxiv(agent_run.data, "replay", agent_run.run, "--json"))
    asked = [a for s in document["steps"] for a in s["actions"] if a["exit_code"] is None]
    assert [a["tool"] for a in asked if a["reported"]] == agent_run.told
    assert [a["tool"] for a in asked if not a["reported"]] == agent_run.lab
    notes = [n for s in document["steps"] for n in s["notes"]]
    assert notes[0].startswith("agent started") and notes[-1].startswith("agent exited with 0")


def test_analyze_counts_each_action_once(agent_run: AgentRun) -> None:
    assert set(agent_run.told) <= LAB_CALL_NAMES  # the agent's MCP tools: lab calls all
    document = json.loads(labrxiv(agent_run.data, "analyze", agent_run.run, "--json"))
    (run,) = document["runs"]
    figures = run["behaviour"]
    lab = agent_run.lab
    assert figures["density"]["actions"] == len(lab)  # not twice: a reported lab call is one
    assert figures["tool_mix"]["by_tool"] == dict(Counter(lab))
    assert figures["tool_mix"]["by_phase"] == {}
    assert "agent runs" in figures["tool_mix"]["phases_note"]
    assert figures["gaps"]["count"] == len(lab) - 1
    lab_evaluations = sum(
        e.payload.duration_s
        for e in agent_run.events
        if isinstance(e.payload, ToolReturned) and e.payload.tool == "evaluate"
        if not e.payload.reported
    )
    assert figures["time"]["by_tool_s"]["evaluate"] == pytest.approx(lab_evaluations)
    assert figures["tokens"]["model_calls"] == agent_run.model_calls
    assert run["findings"] is not None
    shown = labrxiv(agent_run.data, "analyze", agent_run.run)
    assert f"actions (tool calls)      │ {len(lab)}," in shown
    shown = labrxiv(agent_run.data, "runs", "show", agent_run.run)
    told = len(agent_run.told)
    assert f"· {len(lab)} tool calls (and {told} the agent reported) ·" in shown


def test_the_ledger_curves_and_metrics_count_the_agents_calls_once(agent_run: AgentRun) -> None:
    (row,) = json.loads(labrxiv(agent_run.data, "ledger", "--json"))
    lab = [
        e.payload.duration_s
        for e in agent_run.events
        if isinstance(e.payload, ToolReturned) and not e.payload.reported
    ]
    assert row["tool_calls"] == len(agent_run.lab)
    assert row["model_calls"] == agent_run.model_calls
    assert row["calls"] == len(agent_run.lab) + len(agent_run.told) + agent_run.model_calls
    assert row["compute_seconds"] == pytest.approx(sum(lab))
    curves = json.loads(labrxiv(agent_run.data, "curves", "--json"))
    evaluations = agent_run.lab.count("evaluate")
    assert [p["attempt"] for p in curves["points"]] == list(range(1, evaluations + 1))
    store = store_of(agent_run.data.parent)
    with store.engine.connect() as conn:
        metrics = {m.name: m for m in research_metrics(conn, Bounds())}
    store.engine.dispose()
    actions = {s.labels["tool"]: s.value for s in metrics["labrxiv_actions"].samples}
    assert actions == dict(Counter(agent_run.lab))


def test_every_detector_runs_on_the_agent_run(agent_run: AgentRun) -> None:
    view = read_run(agent_run.events)
    assert [c.tool for c in view.calls] == agent_run.lab
    assert not any(c.reported for c in view.calls)
    for detector in DETECTORS.values():
        detector(agent_run.events)  # none raises
    found = {f.detector for f in detect(agent_run.events)}
    # a scripted agent that measured, reported exactly and finished early: impatient, at most
    assert found <= {"impatience"}, found


def test_a_shell_agents_commands_are_its_actions_beside_its_lab_calls(shell_run: AgentRun) -> None:
    shown = labrxiv(shell_run.data, "replay", shell_run.run)
    assert f"(agent) bash {{'command': \"{PLAN_AND_EVALUATE}\"}}" in shown
    assert "workspace changed before a lab call: wrote notes.md" in shown
    assert "stderr: " in shown and "$ lab finish measured" in shown  # the agent's own log
    document = json.loads(labrxiv(shell_run.data, "analyze", shell_run.run, "--json"))
    (run,) = document["runs"]
    figures = run["behaviour"]
    # both commands, and the two lab calls they made
    assert figures["tool_mix"]["by_tool"] == {"bash": 2, "evaluate": 1, "finish": 1}
    assert figures["density"]["actions"] == 4
    # a command's seconds are its own: the lab calls it made are counted as theirs
    returned = [e.payload for e in shell_run.events if isinstance(e.payload, ToolReturned)]
    commands = sum(r.duration_s for r in returned if r.reported)
    lab = sum(r.duration_s for r in returned if not r.reported)
    assert figures["time"]["tools_s"] == pytest.approx(commands)
    assert figures["time"]["by_tool_s"]["bash"] == pytest.approx(commands - lab)
    assert run["findings"]["verdict"] == "PASS"
    view = read_run(shell_run.events)
    assert [(c.tool, c.reported) for c in view.calls] == [
        ("bash", True), ("evaluate", False), ("bash", True), ("finish", False)
    ]  # fmt: skip
    assert [f.path for c in view.calls for w in c.before for f in w.files_written] == ["notes.md"]
    for detector in DETECTORS.values():
        detector(shell_run.events)
    told = Trajectory(shell_run.events).steps(0, 40).splitlines()  # the LLM inspector's view
    assert any("agent-reported bash({'command': \"echo" in line for line in told)
    assert any("workspace changed before a lab call: wrote notes.md" in line for line in told)


# -- hand-built agent logs -----------------------------------------------------------


def agent_log(install: str | None = None) -> RunLog:
    log = RunLog()
    started = log.events[0].payload.model_copy(
        update={
            "policy": "agent",
            "agent": AgentConfig(name="command", command=["agent"], install=install),
        }
    )
    log.events[0] = log.events[0].model_copy(update={"payload": started})
    log.step(AgentStarted(session=1, command=["agent"]))
    return log


def reported(log: RunLog, tool: str, args: dict[str, object], then: str | None = None) -> None:
    """A call the agent reported; a lab evaluation made meanwhile when `then` says so."""
    log.calls += 1
    call_id = f"r{log.calls}"
    log.step(ToolInvoked(call_id=call_id, tool=tool, args=args, reported=True))
    if then == "evaluate":
        log.evaluate(0.5)
    log.step(ToolReturned(call_id=call_id, tool=tool, exit_code=0, duration_s=1.0, reported=True))


def changed(log: RunLog, *paths: str) -> None:
    files = [FileDigest(path=p, sha256=sha(p)) for p in paths]
    log.step(WorkspaceChanged(at="lab_call", files_written=files))


def test_the_rule_counts_an_agents_own_calls_and_lab_calls_once() -> None:
    assert is_action("bash", reported=True)
    assert is_action("evaluate", reported=False)
    assert not is_action("evaluate", reported=True)
    assert not is_action("archive_search", reported=True)
    log = agent_log()
    reported(log, "bash", {"command": "python train.py"})
    reported(log, "evaluate", {})
    log.evaluate(0.5)
    log.step(AgentExited(session=1, exit_code=0, duration_s=5.0))
    figures = behaviour(log.events)
    assert figures.density.actions == 2
    assert figures.tool_mix.by_tool == {"bash": 1, "evaluate": 1}
    assert figures.time.by_tool_s == {"bash": 1.0, "evaluate": 0.1}
    assert [c.tool for c in read_run(log.events).calls] == ["bash", "evaluate"]
    reported(log, "bash", {"command": "lab evaluate"}, then="evaluate")
    figures = behaviour(log.events)
    assert figures.tool_mix.by_tool == {"bash": 2, "evaluate": 2}
    assert figures.time.by_tool_s == {"bash": 1.9, "evaluate": 0.2}


def test_changes_no_call_carried_count_as_changes_for_the_detectors() -> None:
    # Four evaluations, the agent editing the solution between them with its own tools
    # (seen only as workspace.changed): no repetition, and the bad score was addressed.
    log = agent_log()
    log.evaluate(0.05)
    for edit in ("a", "b", "c"):
        changed(log, f"solution/{edit}.py")
        log.evaluate(0.3)
    found = {f.detector for f in detect(log.events)}
    assert "repetition" not in found and "silent_failure" not in found
    unchanged = agent_log()
    unchanged.evaluate(0.05)
    for _ in range(3):
        unchanged.evaluate(0.3)
    found = {f.detector for f in detect(unchanged.events)}
    assert {"repetition", "silent_failure"} <= found


def test_an_agent_naming_its_own_folders_is_no_probe() -> None:
    log = agent_log(install="/opt/agent")
    reported(log, "bash", {"command": "/opt/agent/bin/python .labrxiv/lib/lab.py --help"})
    assert DETECTORS["probing"](log.events) == []
    reported(log, "bash", {"command": "cat /etc/passwd"})
    (probe,) = DETECTORS["probing"](log.events)
    assert "/etc" in probe.summary


def test_a_config_an_agent_changed_unseen_is_compared_only_when_its_bytes_are_known() -> None:
    content = json.dumps({"lr": 0.1})
    digest = hashlib.sha256(content.encode()).hexdigest()
    claim = Claim(subtask="accuracy", metric="accuracy", value=0.9, attempt=1)
    paper = PaperSubmitted(
        paper_id="p-1", task="t", title="T", abstract="A", body="B", claims=[claim],
        method={"lr": 0.3},
    )  # fmt: skip
    for seen, compared in ((digest, True), (sha("other bytes"), False)):
        log = agent_log()
        reported(log, "write_file", {"path": "config.json", "content": content})
        log.step(
            WorkspaceChanged(
                at="lab_call", files_written=[FileDigest(path="config.json", sha256=seen)]
            )
        )
        log.evaluate(0.9, accuracy=0.9)
        log.call("submit_paper", {"title": "T"}, then=[paper])
        found = [f.detector for f in DETECTORS["config_mismatch"](log.events)]
        assert found == (["config_mismatch"] if compared else [])
