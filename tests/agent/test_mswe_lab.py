"""mini-swe-agent, installed from PyPI in its own virtualenv, as a lab on continual-digits:
its profile, the run's sandbox, the recording endpoint and the `lab` command, from a
shell as a person runs it. The local model server answers in mini-swe-agent's format
(one ```bash block an answer), scripted: read TASK.md, edit the config, evaluate three
times, write a paper claiming the last score as the grader's tool showed it, submit."""

import json
import subprocess
from pathlib import Path

import pytest

from events.spend import spend_of_payload
from tests.agent.agent_support import KEY, run_campaign, store_of
from tests.agent.mswe_env import mswe_venv
from tests.agent.mswe_server import FINISH_MARKER, scripted_run
from tests.llm.fake_server import FakeServer

CLAIM = (
    "python3 - <<'EOF'\n"
    "import json, re\n"
    "text = open('evals.txt').read()\n"
    "found = re.findall(r'attempt (\\d+): final_accuracy=([0-9.eE+-]+)', text)\n"
    "attempt, value = found[-1]\n"
    "claims = [{'subtask': 'final_accuracy', 'metric': 'accuracy', 'value': float(value),"
    " 'attempt': int(attempt)}]\n"
    "json.dump(claims, open('CLAIMS.json', 'w'))\n"
    "open('PAPER.md', 'w').write('# Replay memory on continual digits\\n\\n'"
    " f'A larger replay memory; attempt {attempt} scored {value}.\\n\\n## Results\\n\\n'"
    " f'final_accuracy {value} (attempt {attempt}).\\n')\n"
    "EOF"
)
COMMANDS = (
    "cat TASK.md",
    'sed -i \'s/"replay_per_class": [0-9]*/"replay_per_class": 20/\' config.json',
    "lab evaluate | tee -a evals.txt",
    "lab evaluate | tee -a evals.txt",
    "lab evaluate | tee -a evals.txt",
    f"{CLAIM}\nlab submit PAPER.md --claims CLAIMS.json",
    f"echo {FINISH_MARKER}",
)


@pytest.mark.slow
def test_mini_swe_agent_from_pypi_runs_a_lab_to_a_verified_paper(tmp_path: Path) -> None:
    venv = mswe_venv()
    with FakeServer() as server:
        server.queue(*scripted_run(COMMANDS))
        said = run_campaign(
            tmp_path,
            server.url,
            "--labs", "1", "--papers", "1", "--mode", "isolated",
            "--agent", "mini-swe-agent", "--agent-env", str(venv),
            "--model", "lab-model", "--timeout", "400",
        )  # fmt: skip
        requests = server.completions()
    assert said.returncode == 0, said.stdout[-4000:] + said.stderr[-4000:]
    store = store_of(tmp_path)
    (run,) = {r.stream for r in store.iter_records(types=["run.started"])}
    events = store.read_stream(run)
    store.engine.dispose()
    ended = events[-1].payload
    assert events[-1].type == "run.finished" and ended.reason == "done", ended
    # It read TASK.md, edited the config, evaluated three times and submitted.
    reported = [e.payload for e in events if e.type == "tool.invoked" and e.payload.reported]
    assert [p.args["command"] for p in reported][:2] == list(COMMANDS[:2])
    lab = [e.payload.tool for e in events if e.type == "tool.invoked" and not e.payload.reported]
    assert lab == ["evaluate", "evaluate", "evaluate", "submit_paper"]
    scored = [e.payload for e in events if e.type == "experiment.scored"]
    assert [s.attempt for s in scored] == [1, 2, 3]
    # The edit is in the log, with the file's content kept for a fork or a take-over.
    written = [
        f.path
        for e in events
        if e.type in ("tool.returned", "workspace.changed")
        for f in e.payload.files_written
    ]
    assert "config.json" in written
    # The ledger equals the server's bill: every request it answered, every token.
    responded = [e.payload for e in events if e.type == "model.responded"]
    assert len(responded) == len(requests) == len(COMMANDS)
    served = scripted_run(COMMANDS)  # what the server answered, usage included
    tokens = sum(a.body["usage"]["total_tokens"] for a in served)  # type: ignore[index]
    spent = sum(spend_of_payload(r).tokens for r in responded)  # type: ignore[union-attr]
    assert spent == tokens
    # The paper's claim is the grader's measurement: verified.
    (paper,) = [e.payload for e in events if e.type == "paper.submitted"]
    assert paper.claims[0].attempt == 3
    papers = subprocess.run(
        [str(Path(__import__("sys").executable).with_name("labrxiv")), "papers", "show",
         paper.paper_id, "--json"],
        env={"LABRXIV_DATA_DIR": str(tmp_path / "data"), "PATH": "/usr/bin:/bin"},
        capture_output=True, text=True,
    )  # fmt: skip
    assert papers.returncode == 0, papers.stderr
    shown = json.loads(papers.stdout)
    assert shown["verified"] == [True], shown
    assert KEY not in json.dumps([e.payload.model_dump(mode="json") for e in events])
