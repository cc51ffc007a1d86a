"""How many llm labs does the embedded default hold, beside Inspect AI on the same server?

For 10, 50 and 100 labs, `labrxiv campaign --policy llm` runs on the embedded defaults
(no Redis, no database URL: SQLite and the in-process bus; past 25 labs, its steps in
worker processes, one per 25 labs up to the cores), as a person runs it, and again with
`--processes 1` where that differs (every step in the command's own process: the
baseline), against the tests' local OpenAI-compatible server answering every call with
a tool call after an added latency (default 500 ms); isolated labs with room for every
call in one phase (`--phase-calls`), so no run ends inside the window. Then Inspect AI
runs the same number of tool-calling agents (`basic_agent` with one tool, every answer a
call of it) against the same server. Each is measured over a window after a warm-up
that begins once the server has had a call for each agent (start-up behind it):
answered model calls per second against the ideal (agents / latency: each agent always
has one call in flight when nothing else costs time) and the CPU seconds its process
spent per answered call in the window (/proc). Calls are counted at the server, as the
requests received in the window: in steady state each agent has one call in flight at
both ends of it.

Inspect AI is a peer, not a dependency (it needs an openai the project does not pin):
it is installed in a virtual environment of the bench's own (`--inspect-venv`, made
with pip on first use), and run as a subprocess.

    python bench/embedded_scale.py [--labs 10 50 100] [--latency 0.5] [--window 20]
                                   [--warmup 15] [--inspect-venv bench/.inspect-venv]
                                   [--no-inspect]
"""

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "llm"))

from common import machine_cpu, tree_cpu  # noqa: E402
from fake_server import FakeServer, completion, usage  # noqa: E402

from labrxiv.cli_campaign import LABS_A_PROCESS  # noqa: E402

LABRXIV = Path(sys.executable).with_name("labrxiv")
INSPECT_AI = ("inspect-ai==0.3.285", "openai>=3.4")
"""What the peer's environment gets: Inspect AI, and the openai its provider imports."""
MODEL = "bench-model"
PHASE_CALLS = 100_000
"""Model calls a phase may take: more than any window sees, so every lab runs throughout."""
TOOL_ARGS = '{"path": "config.json"}'

PEER_TASK = '''
"""Inspect AI's side of bench/embedded_scale.py: `agents` tool-calling agents at once."""

from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.scorer import includes
from inspect_ai.solver import basic_agent
from inspect_ai.tool import tool


@tool
def read_file():
    async def execute(path: str) -> str:
        """Read a file of the workspace.

        Args:
            path: The file's path.
        """
        return '{"learning_rate": 0.01, "epochs": 3}'

    return execute


@task
def peers(agents: int = 10, turns: int = 1000):
    samples = [Sample(input="Tune the model; read config.json first.", target="done", id=i)
               for i in range(agents)]
    return Task(
        dataset=samples,
        solver=basic_agent(tools=[read_file()], message_limit=2 * turns + 2),
        scorer=includes(),
    )
'''


@dataclass(frozen=True)
class Figures:
    rate: float
    """Answered calls per second in the window."""
    cpu_ms: float
    """CPU milliseconds of the measured process (and its children) per answered call."""
    machine_busy: float
    """How busy the whole machine was in the window (all cores, 0..1)."""


def measure(
    server: FakeServer,
    command: list[str],
    env: dict[str, str],
    cwd: Path,
    agents: int,
    warmup: float,
    window: float,
) -> Figures:
    """Start `command`; once the server has had as many calls as it has `agents` (its
    start-up and its first calls behind it, on a slow machine too), let it warm up for
    `warmup`, then count the calls and its CPU over `window`."""
    before = server.served
    with open(cwd / "output.txt", "wb") as output:
        proc = subprocess.Popen(
            command,
            env=env,
            cwd=cwd,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            while server.served - before < agents and proc.poll() is None:
                time.sleep(0.1)
            time.sleep(warmup)
            if proc.poll() is not None:
                said = (cwd / "output.txt").read_text(errors="replace")[-3000:]
                raise SystemExit(f"{command[0]} ended during the warm-up:\n{said}")
            calls, cpu, (busy, total) = server.served, tree_cpu(proc.pid), machine_cpu()
            started = time.monotonic()
            time.sleep(window)
            calls = server.served - calls
            cpu = tree_cpu(proc.pid) - cpu
            elapsed = time.monotonic() - started
            busy_after, total_after = machine_cpu()
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return Figures(
        rate=calls / elapsed,
        cpu_ms=1000 * cpu / max(1, calls),
        machine_busy=(busy_after - busy) / max(1e-9, total_after - total),
    )


def labrxiv_campaign(
    server: FakeServer, labs: int, warmup: float, window: float, processes: int | None = None
) -> Figures:
    """`labrxiv campaign --policy llm --labs N` on the embedded defaults (`--processes`
    when `processes` is given)."""
    with tempfile.TemporaryDirectory() as folder:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("LABRXIV_", "OPENAI_"))}
        env |= {
            "OPENAI_BASE_URL": server.url,
            "OPENAI_API_KEY": "bench-key",
            "LABRXIV_DATA_DIR": str(Path(folder) / "data"),
            "COLUMNS": "120",
        }
        command = [str(LABRXIV), "campaign", "--task", "continual-digits", "--policy", "llm"]
        command += ["--model", MODEL, "--labs", str(labs), "--papers", "1", "--timeout", "3600"]
        # The model never moves on by itself: without room, every run would end its cycle
        # after 4 × 12 calls, inside the window, and the labs left would be fewer. Isolated
        # labs begin in the plan phase, which offers the tool the model calls.
        command += ["--phase-calls", str(PHASE_CALLS), "--mode", "isolated"]
        command += [] if processes is None else ["--processes", str(processes)]
        return measure(server, command, env, Path(folder), labs, warmup, window)


def inspect_agents(
    server: FakeServer, venv: Path, agents: int, warmup: float, window: float
) -> Figures:
    """`inspect eval` of `agents` tool-calling agents, all at once, on the same server."""
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "peer_task.py").write_text(PEER_TASK)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("INSPECT_", "OPENAI_"))}
        env |= {
            "OPENAI_BASE_URL": server.url,
            "OPENAI_API_KEY": "bench-key",
            "INSPECT_LOG_DIR": str(Path(folder) / "logs"),
        }
        command = [str(venv / "bin" / "inspect"), "eval", "peer_task.py"]
        command += ["--model", f"openai/{MODEL}", "-M", "responses_api=false"]
        command += ["-T", f"agents={agents}", "--max-samples", str(agents)]
        command += ["--max-connections", str(agents), "--display", "none"]
        return measure(server, command, env, Path(folder), agents, warmup, window)


def inspect_venv(venv: Path) -> Path:
    """The bench's own environment with Inspect AI in it, made on first use."""
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    if subprocess.run([python, "-c", "import inspect_ai, openai"], capture_output=True).returncode:
        print(f"installing {' '.join(INSPECT_AI)} into {venv} (once)", flush=True)
        subprocess.run([python, "-m", "pip", "install", "--quiet", *INSPECT_AI], check=True)
    return venv


def row(name: str, agents: int, ideal: float, got: Figures) -> str:
    return (
        f"{name:<9} {agents:>5}  {got.rate:>8.1f}  {ideal:>6.1f}  {got.rate / ideal:>8.0%}  "
        f"{got.cpu_ms:>9.1f} ms  {got.machine_busy:>12.0%}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--labs", type=int, nargs="+", default=[10, 50, 100])
    parser.add_argument("--latency", type=float, default=0.5)
    parser.add_argument("--window", type=float, default=20.0)
    parser.add_argument("--warmup", type=float, default=15.0)
    parser.add_argument("--inspect-venv", type=Path, default=ROOT / "bench" / ".inspect-venv")
    parser.add_argument("--no-inspect", action="store_true", help="measure labrxiv alone")
    args = parser.parse_args()
    venv = None if args.no_inspect else inspect_venv(args.inspect_venv.resolve())
    print(
        f"model latency {args.latency * 1000:.0f} ms, warm-up {args.warmup:.0f} s, window "
        f"{args.window:.0f} s, {os.cpu_count()} cores"
    )
    print(
        f"{'':<9} {'labs':>5}  {'calls/s':>8}  {'ideal':>6}  {'of ideal':>8}  "
        f"{'CPU/call':>12}  {'machine busy':>12}"
    )
    reply = completion(tool_calls=[("read_file", TOOL_ARGS)], usage=usage(200, 20))
    server = FakeServer(default=reply, models=(MODEL,), latency_s=args.latency, keep=False)
    with server:
        for labs in args.labs:
            ideal = labs / args.latency
            got = labrxiv_campaign(server, labs, args.warmup, args.window)
            print(row("labrxiv", labs, ideal, got), flush=True)
            if labs > LABS_A_PROCESS and len(os.sched_getaffinity(0)) > 1:
                one = labrxiv_campaign(server, labs, args.warmup, args.window, processes=1)
                print(row("1 process", labs, ideal, one), flush=True)
            if venv is not None:
                peer = inspect_agents(server, venv, labs, args.warmup, args.window)
                print(row("inspect", labs, ideal, peer), flush=True)


if __name__ == "__main__":
    main()
