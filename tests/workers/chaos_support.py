"""The parts of the chaos suite (test_chaos.py): labrxiv's processes, a Redis of its own
that can be restarted empty, PostgreSQL refusing and terminating connections, and
what a campaign's log says about lost and duplicated work.

Loaded by name from tests/workers (not a package), as the other distributed tests load
their helpers.
"""

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import psycopg
import pytest
import redis
from sqlalchemy.engine import make_url

from events import EventStore
from events.recorded import Recorded

LABRXIV = Path(sys.executable).with_name("labrxiv")
PG_ADMIN = "postgresql://postgres@127.0.0.1:5432/postgres"


class Service:
    """One labrxiv process (`labrxiv worker`, `reactor`, `projector`…), in its own session
    so that a SIGKILL takes its pool children with it, as a container's would."""

    def __init__(self, name: str, args: list[str], env: dict[str, str], folder: Path) -> None:
        self.name, self.args, self.env = name, args, env
        self.log = folder / f"{name}.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.kills = 0

    def start(self) -> "Service":
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(
                [str(LABRXIV), *self.args],
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        return self

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        """SIGKILL the process and its children, and reap it."""
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(timeout=30)
        self.kills += 1

    def restart(self) -> None:
        """Killed and started again at once, as a supervisor (compose's `restart`) does."""
        self.kill()
        self.start()

    def tail(self, lines: int = 40) -> str:
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return f"--- {self.name} ---\n" + "\n".join(text.splitlines()[-lines:])


class RedisServer:
    """A redis-server of the test's own, with nothing on disk, on a port that stays the
    same across restarts (the workers' URL does not change)."""

    def __init__(self, folder: Path, port: int) -> None:
        self.folder, self.port = folder, port
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> "RedisServer":
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1"]
            + ["--save", "", "--appendonly", "no", "--dir", str(self.folder)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        client = redis.Redis(port=self.port, socket_connect_timeout=1)
        try:
            for _ in range(200):
                try:
                    client.ping()
                    return self
                except redis.ConnectionError:
                    if self.proc.poll() is not None:
                        pytest.fail(f"redis-server exited at start on port {self.port}")
                    time.sleep(0.05)
        finally:
            client.close()
        pytest.fail(f"redis-server did not answer on port {self.port}")

    def restart_empty(self) -> None:
        """SIGKILL and start again: every queued and unacknowledged message is gone."""
        self.stop()
        self.start()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)


def postgres_outage(url: str, seconds: float) -> int:
    """PostgreSQL away for `seconds`: the database refuses new connections and every open
    one is terminated; returns how many were terminated."""
    database = make_url(url).database
    with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
        admin.execute(f'ALTER DATABASE "{database}" WITH ALLOW_CONNECTIONS false')
        try:
            killed = admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = %s AND pid <> pg_backend_pid()",
                (database,),
            ).fetchall()
            time.sleep(seconds)  # the outage itself
        finally:
            admin.execute(f'ALTER DATABASE "{database}" WITH ALLOW_CONNECTIONS true')
    return len(killed)


def wait_until(
    what: str, ready: Callable[[], bool], services: list[Service], seconds: float
) -> float:
    """Poll `ready` every 20 ms; returns the seconds it took, or fails with the logs."""
    began = time.monotonic()
    while time.monotonic() - began < seconds:
        try:
            if ready():
                return time.monotonic() - began
        except Exception:  # the database may be away during a fault: look again
            pass
        time.sleep(0.02)
    pytest.fail(f"not within {seconds:.0f}s: {what}\n" + "\n".join(s.tail() for s in services))


@dataclass
class Outcome:
    """What a campaign's log says of its runs after a fault."""

    runs: int
    done: int
    lost: list[str]
    duplicated: list[str]
    longest_stall_s: float
    """The longest a run went without an event, of the silences that ended after the
    fault began: how long the fault held the slowest run up."""


def examine(
    store: EventStore, runs: list[str], attempts: int, papers: int, at: datetime
) -> Outcome:
    """Lost and duplicated work in `runs`, from the log alone."""
    lost: list[str] = []
    duplicated: list[str] = []
    done = 0
    stall = 0.0
    for stream in runs:
        records = list(store.iter_records(0, stream=stream))
        stall = max(stall, _longest_silence(records, at))
        short = stream.removeprefix("run-")[:8]
        versions = [r.version for r in records]
        if versions != list(range(len(records))):
            lost.append(f"{short}: versions {versions[:3]}… not contiguous")
        finishes = [r for r in records if r.type == "run.finished"]
        if len(finishes) > 1:
            duplicated.append(f"{short}: {len(finishes)} run.finished")
        if finishes and finishes[-1].payload.get("reason") == "done":
            done += 1
        else:
            reason = finishes[-1].payload.get("reason") if finishes else "not finished"
            lost.append(f"{short}: {reason}")
        scored = Counter(r.payload["attempt"] for r in records if r.type == "experiment.scored")
        duplicated += [f"{short}: attempt {a} scored {n}x" for a, n in scored.items() if n > 1]
        if sorted(scored) != list(range(1, attempts + 1)):
            lost.append(f"{short}: attempts scored {sorted(scored)} of {attempts}")
        submitted = sum(r.type == "paper.submitted" for r in records)
        if submitted > papers:
            duplicated.append(f"{short}: {submitted} papers")
        elif submitted < papers:
            lost.append(f"{short}: {submitted} papers of {papers}")
        invoked = Counter(r.payload["call_id"] for r in records if r.type == "tool.invoked")
        returned = Counter(r.payload["call_id"] for r in records if r.type == "tool.returned")
        duplicated += [
            f"{short}: tool call {c} {n}x" for c, n in (invoked + returned).items() if n > 2
        ]
        lost += [f"{short}: tool call {c} never returned" for c in invoked if c not in returned]
    return Outcome(len(runs), done, lost, duplicated, stall)


def _longest_silence(records: list[Recorded], at: datetime) -> float:
    """The longest gap between a run's consecutive events (or between `at` and its first
    event after `at`) among those ending after `at`."""
    times = sorted(r.recorded_at for r in records)
    longest = 0.0
    previous = None
    for moment in times:
        if moment > at:
            start = max(previous, at) if previous is not None else at
            longest = max(longest, (moment - start).total_seconds())
        previous = moment
    return longest
