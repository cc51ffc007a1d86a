"""`labrxiv campaign --phase-calls N`: an llm lab whose model never moves on by itself is
moved to the next phase after N calls in one, and the run records N."""

import os
import subprocess
import sys
from pathlib import Path

from fake_server import FakeServer, completion, usage

from events import EventStore

LABRXIV = Path(sys.executable).with_name("labrxiv")


def test_a_phase_takes_as_many_calls_as_the_option_says(tmp_path: Path) -> None:
    reply = completion(tool_calls=[("read_file", '{"path": "README.md"}')], usage=usage(50, 5))
    data = tmp_path / "data"
    with FakeServer(default=reply, models=("fake-model",), latency_s=0.0) as server:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("LABRXIV_", "OPENAI_"))}
        env |= {
            "OPENAI_API_KEY": "sk-phase-calls-test",
            "OPENAI_BASE_URL": server.url,
            "LABRXIV_DATA_DIR": str(data),
        }
        args = ["campaign", "--task", "continual-digits", "--policy", "llm", "--model"]
        args += ["fake-model", "--labs", "1", "--papers", "1", "--phase-calls", "2"]
        said = subprocess.run(
            [str(LABRXIV), *args], env=env, capture_output=True, text=True, timeout=120
        )
        calls = len(server.completions())
    # the model never evaluated, so the run ends in error and the campaign says so
    assert said.returncode == 1, (said.stdout + said.stderr)[-3000:]
    assert "every run ended in error" in said.stdout
    store = EventStore.from_url(f"sqlite:///{data / 'labrxiv.db'}", create=False)
    started = next(store.iter_records(types=["run.started"])).payload
    phases = [r.payload["phase"] for r in store.iter_records(types=["phase.entered"])]
    store.engine.dispose()
    assert started["llm"]["phase_calls"] == 2
    # literature, plan, experiment and writeup, two calls each
    assert phases == ["literature", "plan", "experiment", "writeup"]
    assert calls == 8
