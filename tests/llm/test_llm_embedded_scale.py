"""Twenty `llm` labs on the embedded defaults (SQLite, the in-process bus), run from a
shell as a person runs them, against the local OpenAI-compatible server: every run
finishes by its own rule, and nothing but the live table and the endings is printed,
whether their steps run in this process or in two worker processes (`--processes`).

Twenty labs mean twenty bus threads writing one SQLite file at once (step leases, the
recorder, the reactor) beside the watcher's read models: what a capped connection pool
and SQLite's own busy polling could not hold (QueuePool timeouts, "database is locked",
every run interrupted).
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from fake_server import FakeServer, completion, usage

from events import EventStore

LABRXIV = Path(sys.executable).with_name("labrxiv")
LABS = 20
NOISE = ("Traceback", "OperationalError", "QueuePool", "database is locked", "ERROR", "WARNING")


@pytest.mark.slow
@pytest.mark.parametrize("processes", [1, 2])
def test_twenty_embedded_llm_labs_all_finish_quietly(tmp_path: Path, processes: int) -> None:
    # Every answer asks for a tool, so each model call is one step: the steps budget
    # ends every run after five calls.
    reply = completion(tool_calls=[("read_file", '{"path": "README.md"}')], usage=usage(50, 5))
    data = tmp_path / "data"
    with FakeServer(default=reply, models=("fake-model",), latency_s=0.01) as server:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("LABRXIV_", "OPENAI_"))}
        env |= {
            "OPENAI_API_KEY": "sk-embedded-scale-test",
            "OPENAI_BASE_URL": server.url,
            "LABRXIV_DATA_DIR": str(data),
            "COLUMNS": "100",
        }
        args = ["campaign", "--task", "continual-digits", "--policy", "llm"]
        args += ["--model", "fake-model", "--labs", str(LABS), "--papers", "1", "--steps", "5"]
        args += ["--processes", str(processes)]
        # A bound on a stalled campaign (it then stops as at Ctrl-C, its runs
        # `interrupted`), not a figure: twenty labs finish in seconds.
        args += ["--timeout", "150"]
        said = subprocess.run(
            [str(LABRXIV), *args], env=env, capture_output=True, text=True, timeout=300
        )
        calls = len(server.completions())
    shown = said.stdout + said.stderr
    for noise in NOISE:
        assert noise not in shown, shown[-6000:]
    assert said.stderr == "", said.stderr[-6000:]
    assert said.returncode == 0, shown[-6000:]
    assert (f"steps: {processes} worker processes" in said.stdout) == (processes > 1)
    store = EventStore.from_url(f"sqlite:///{data / 'labrxiv.db'}", create=False)
    runs = {r.stream for r in store.iter_records(types=["run.started"])}
    endings = {r.stream: r.payload["reason"] for r in store.iter_records(types=["run.finished"])}
    store.engine.dispose()
    assert len(runs) == LABS
    assert endings.keys() == runs, f"{len(runs) - len(endings)} runs did not finish"
    assert set(endings.values()) <= {"done", "budget"}, endings
    assert calls >= LABS, calls
