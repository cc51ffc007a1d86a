"""A worker SIGKILLed in the middle of an agent's session: its jail dies with it, the
session's lease runs out, the reaper sends the run's step again and another worker starts
the agent again in the workspace rebuilt from the log; the run ends `done` there, and the
model call the kill cut off stays in the ledger as one of unknown outcome."""

import hashlib
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from sqlalchemy import select

from events import EventStore
from events.payloads import LlmConfig
from labrxiv.settings import load_settings
from labrxiv.wiring import open_bus
from projections.catalogue import all_projectors
from projections.ledger import LEDGER
from projections.runner import ProjectionRunner
from tests.agent.agent_support import KEY, agent_folder, researcher, tool_results
from tests.llm.fake_server import FakeServer, Received, Scripted, hang
from workers.agent.profile import agent_config
from workers.lab.campaign import CampaignPlan, start_campaign

pytestmark = [pytest.mark.redis, pytest.mark.postgres, pytest.mark.slow]

LABRXIV = Path(sys.executable).with_name("labrxiv")
STALL = 6
"""Seconds a dead worker's session lease lasts (`LABRXIV_STALL_SECONDS`), and the quiet
the reaper waits for, instead of the default 30."""
WRITTEN = "outputs/predictions_after_task_5.npy"
"""A file the agent's first session made (its `evaluate` ran the solution, which wrote it)."""


@dataclass
class Sessions:
    """What the scripted model saw of the agent's sessions: each session starts with a
    conversation carrying no tool result, and the model's answers depend on it."""

    workspaces: Path
    """Where the run's workspace is made (the only one there)."""
    agent: str
    """The agent's script path: in the command line of every process of a session."""
    workers: Callable[[], dict[int, str]]
    """The steps workers alive: pid → name."""
    started: int = 0
    ran_on: list[str | None] = field(default_factory=list)
    """The worker each session ran on, found from its agent's parent processes."""
    pids: list[set[int]] = field(default_factory=list)
    """The processes of each session when it made its first model call."""
    alive_then: set[int] = field(default_factory=set)
    """Processes of earlier sessions still alive when a later one made its first call."""
    found: list[str | None] = field(default_factory=list)
    """The SHA-256 of `WRITTEN` in the workspace at each session's first model call (None:
    not there)."""
    lock: threading.Lock = field(default_factory=threading.Lock)

    def answer(self, received: Received) -> Scripted:
        told = tool_results(received.body)
        with self.lock:
            if not told:
                self.started += 1
                self._look()
            if self.started == 1 and told:  # the first session's 2nd call: the kill lands
                return hang()
        return researcher(attempts=1)(received)

    def _look(self) -> None:
        mine = processes_of(self.agent)
        earlier = set().union(*self.pids) if self.pids else set()
        self.alive_then |= mine & earlier
        self.pids.append(mine - earlier)
        self.ran_on.append(worker_of(mine - earlier, self.workers()))
        (workspace,) = self.workspaces.glob("run-*")
        path = workspace / WRITTEN
        self.found.append(hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None)


def processes_of(needle: str) -> set[int]:
    """The processes whose command line holds `needle`."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if needle.encode() in (entry / "cmdline").read_bytes():
                found.add(int(entry.name))
        except OSError:
            continue  # it ended meanwhile
    return found


def parent_of(pid: int) -> int:
    try:
        stat = (Path("/proc") / str(pid) / "stat").read_text()
    except OSError:
        return 0
    return int(stat.rsplit(")", 1)[1].split()[1])


def worker_of(pids: set[int], workers: dict[int, str]) -> str | None:
    """The worker whose process tree holds `pids` (through a pool child and the jail)."""
    for pid in pids:
        while pid > 1:
            if pid in workers:
                return workers[pid]
            pid = parent_of(pid)
    return None


TASK_LINE = re.compile(r"Task labrxiv\.lab_step\[([0-9a-f-]+)\] (received|succeeded)")


def lab_steps(log: Path, how: str) -> list[str]:
    """The ids of the lab steps a worker's log says it `received` or has `succeeded`."""
    return [task for task, said in TASK_LINE.findall(log.read_text()) if said == how]


def _process(argv: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        return subprocess.Popen(
            [str(LABRXIV), *argv], env=env, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip


def _kill(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


def _until(condition: Callable[[], bool], seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"not within {seconds:g} s: {what}")
        time.sleep(0.1)


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer(models=("gpt-4o-mini",)) as running:
        yield running


def test_an_agent_session_killed_with_its_worker_finishes_on_another(
    redis_url: str, pg_url: str, tmp_path: Path, server: FakeServer
) -> None:
    folder = agent_folder(tmp_path, "openai_mcp_agent.py")
    data = tmp_path / "data"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LABRXIV_", "OPENAI_"))}
    env |= {
        "LABRXIV_REDIS_URL": redis_url,
        "LABRXIV_DATABASE_URL": pg_url,
        # Shorter than a session: the step message a session's worker holds is delivered
        # again while it runs, and that take must do nothing (`workers.lab.lease.SESSION`).
        "LABRXIV_VISIBILITY_TIMEOUT": "4",
        "LABRXIV_DATA_DIR": str(data),
        "LABRXIV_STALL_SECONDS": str(STALL),
        "OPENAI_API_KEY": KEY,
        "OPENAI_BASE_URL": server.url,
    }
    logs = tmp_path / "logs"
    logs.mkdir()
    steps = {
        name: _process(["worker", "-Q", "steps", "-c", "1"], env, logs / f"{name}.log")
        for name in ("steps-a", "steps-b")
    }  # prefork: the session runs in a pool child, as one task
    procs = [
        *steps.values(),
        _process(["worker", "-Q", "events", "-c", "2", "-P", "threads"], env, logs / "rec.log"),
        _process(["reactor", "--interval", "0.5"], env, logs / "reactor.log"),
    ]
    settings = load_settings(redis_url=redis_url, database_url=pg_url, data_dir=data)
    store = EventStore.from_url(settings.store_url)

    def alive() -> dict[int, str]:
        return {p.pid: name for name, p in steps.items() if p.poll() is None}

    script = f"{folder}/openai_mcp_agent.py"
    sessions = Sessions(data / "workspaces", script, alive)
    server.default = sessions.answer
    try:
        plan = CampaignPlan(
            task="continual-digits",
            labs=1,
            papers=1,
            mode="isolated",
            seed=3,
            policy="agent",
            llm=LlmConfig(model="gpt-4o-mini"),
            agent=agent_config(f"python {script}", "gpt-4o-mini", folder, None),
        )
        _campaign, (stream,) = start_campaign(open_bus(settings), plan)

        _until(lambda: len(server.completions()) >= 2, 120, "the agent's 2nd model call")
        (victim,) = [name for name in steps if name == sessions.ran_on[0]]
        (survivor,) = [name for name in steps if name != victim]
        first = sessions.pids[0] | processes_of(script)
        # The session is one task of the victim's pool. Past the visibility timeout the
        # broker hands its message to the other worker, whose take does nothing.
        victim_log, survivor_log = logs / f"{victim}.log", logs / f"{survivor}.log"
        (session_task,) = set(lab_steps(victim_log, "received")) - set(
            lab_steps(victim_log, "succeeded")
        )
        _until(
            lambda: session_task in lab_steps(survivor_log, "succeeded"),
            45,  # the model holds the call 60 s (`hang`)
            "the session's step delivered again to the other worker",
        )
        assert [e.type for e in store.read_stream(stream)].count("agent.started") == 1
        _kill(steps[victim])  # the worker dies while the model holds the agent's call
        # What the first session wrote is now only in the log (its lease keeps the next
        # session away for seconds yet).
        (data / "workspaces" / stream / WRITTEN).unlink()
        _until(lambda: not (processes_of(script) & first), 10, "the killed session's end")

        def finished() -> bool:
            events = store.read_stream(stream)
            return bool(events) and events[-1].type == "run.finished"

        _until(finished, 180, "the run's end")
        events = store.read_stream(stream)
    except BaseException:
        for log in sorted(logs.iterdir()):
            print(f"--- {log.name}\n{log.read_text()[-4000:]}")
        raise
    finally:
        for proc in procs:
            _kill(proc)

    ended = events[-1].payload
    assert ended.reason == "done", ended
    assert [e.version for e in events] == list(range(len(events)))
    # One session at a time: the second ran on the other worker, once nothing of the
    # first was left; the step delivered again meanwhile (the broker's visibility
    # timeout, the reaper) started no other.
    starts = [e for e in events if e.type == "agent.started"]
    assert [(s.payload.session, s.payload.restored) for s in starts] == [(1, False), (2, True)]
    assert "ended with its worker" in starts[1].payload.detail
    assert "rebuilt from the log" in starts[1].payload.detail
    assert [e.payload.session for e in events if e.type == "agent.exited"] == [2]
    assert sessions.ran_on == [victim, survivor]
    assert sessions.alive_then == set()
    # The workspace was rebuilt from the log: the file the first session made was there,
    # as the log has it, when the second one began (the test had removed it from the disk).
    restart = starts[1].version
    (written,) = [
        f.sha256
        for e in events[:restart]
        if e.type in ("tool.returned", "workspace.changed")
        for f in e.payload.files_written
        if f.path == WRITTEN
    ]
    assert sessions.found == [None, written]
    # The call the kill cut off is in the log with no outcome, in the first session.
    called = [e for e in events if e.type == "model.called"]
    outcomes = {e.payload.call_id for e in events if e.type in ("model.responded", "model.failed")}
    interrupted = [c for c in called if c.payload.call_id not in outcomes]
    assert len(interrupted) == 1 and interrupted[0].version < restart
    assert len(called) == len(server.completions()) == 2 + 3  # 2 before the kill, 3 after

    ProjectionRunner(store, all_projectors()).catch_up()
    with store.engine.connect() as conn:
        rows = conn.execute(select(LEDGER).where(LEDGER.c.kind == "model")).mappings().all()
    store.engine.dispose()
    statuses = {row["call_id"]: row["status"] for row in rows}
    assert statuses[interrupted[0].payload.call_id] == "called"  # of unknown outcome
    assert len(rows) == len(called)
