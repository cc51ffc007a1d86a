"""How many agent labs does the embedded default hold?

`labrxiv campaign --policy agent` runs N labs of the 50-line example agent
(workers/agent/examples/script_agent.py) on the embedded defaults (SQLite, the
in-process bus, one process), as a person runs it, each agent a process in its own
sandbox talking to the recording relay, against the tests' local OpenAI-compatible
server (every answer one shell command: read TASK.md, `lab evaluate` twice, `lab
finish`; 100 ms of added latency). For each N it prints how the runs ended, the agent
sessions started (one a run when no session was taken over), the dead letters, the
model calls the server answered, and the campaign's wall time beside one lab's from
the same run (the baseline: N labs on 2 cores cannot beat N times a lone lab's CPU).

    python bench/agent_labs.py [--labs 1 10 50] [--latency 0.1]
"""

import argparse
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "llm"))

from fake_server import FakeServer, Received, Scripted, completion, usage  # noqa: E402

LABRXIV = Path(sys.executable).with_name("labrxiv")
AGENT = ROOT / "workers" / "agent" / "examples" / "script_agent.py"

COMMANDS = ["cat TASK.md | head -5", "lab evaluate", "lab evaluate", "lab finish measured"]


def answer(received: Received) -> Scripted:
    """The next command of the script, by the turns the conversation holds."""
    turns = sum(1 for m in received.body.get("messages", []) if m.get("role") == "assistant")
    command = COMMANDS[min(turns, len(COMMANDS) - 1)]
    return completion(text=f"```bash\n{command}\n```", usage=usage(200, 30))


def campaign(labs: int, latency: float) -> str:
    """One campaign of `labs` agent labs; its figures as a line."""
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch) / "agent"  # readable by the sandbox's user
        folder.mkdir()
        shutil.copyfile(AGENT, folder / AGENT.name)
        for path in (Path(scratch), folder, folder / AGENT.name):
            path.chmod(0o755)
        data = Path(scratch) / "data"
        with FakeServer(default=answer, models=("gpt-4o-mini",), latency_s=latency) as server:
            env = {k: v for k, v in os.environ.items() if not k.startswith(("LABRXIV_", "OPENAI_"))}
            env |= {"OPENAI_API_KEY": "bench-key", "OPENAI_BASE_URL": server.url}
            env |= {"LABRXIV_DATA_DIR": str(data), "LABRXIV_LOG_LEVEL": "ERROR"}
            began = time.monotonic()
            subprocess.run(
                [str(LABRXIV), "campaign", "--task", "continual-digits", "--policy", "agent",
                 "--labs", str(labs), "--mode", "isolated",
                 "--agent", f"python {folder}/script_agent.py", "--agent-env", str(folder),
                 "--model", "gpt-4o-mini", "--timeout", "1800"],
                env=env, capture_output=True, text=True, check=False,
            )  # fmt: skip
            took = time.monotonic() - began
            calls = len(server.completions())
        with sqlite3.connect(data / "labrxiv.db") as db:
            ends = dict(
                db.execute(
                    "SELECT json_extract(payload, '$.reason'), count(*) FROM events"
                    " WHERE type = 'run.finished' GROUP BY 1"
                ).fetchall()
            )
            sessions = db.execute("SELECT count(*) FROM events WHERE type = 'agent.started'")
            started = sessions.fetchone()[0]
            dead = db.execute("SELECT count(*) FROM dead_letters").fetchone()[0]
    ended = ", ".join(f"{n} {reason}" for reason, n in sorted(ends.items()))
    return (
        f"{labs:>4} labs: {took:6.1f} s, runs {ended}; {started} sessions, {dead} dead letters,"
        f" {calls} model calls"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--labs", type=int, nargs="+", default=[1, 10, 50])
    parser.add_argument("--latency", type=float, default=0.1)
    args = parser.parse_args()
    for labs in args.labs:
        print(campaign(labs, args.latency), flush=True)


if __name__ == "__main__":
    main()
