"""A `labrxiv worker` in a process of its own, for tests that go through the real Redis.

Loaded by path (tests/workers is not a package), as test_celery_delivery.py loads its
publisher. The worker runs in its own session, so a kill takes its pool children
with it; `wait_for` fails at once, with the worker's log, when the worker has exited.
"""

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

LABRXIV = Path(sys.executable).with_name("labrxiv")


def environment(redis_url: str, store_url: str, tmp_path: Path, visibility: int = 4) -> dict:
    """The `LABRXIV_*` environment of a worker on this Redis and this log."""
    env = dict(os.environ)
    env.update(
        LABRXIV_REDIS_URL=redis_url,
        LABRXIV_DATABASE_URL=store_url,
        LABRXIV_VISIBILITY_TIMEOUT=str(visibility),
        LABRXIV_DATA_DIR=str(tmp_path / "data"),
        LABRXIV_LOG_LEVEL="INFO",
    )
    return env


class WorkerProcess:
    """`labrxiv worker` on `queues`, logging to `log`."""

    def __init__(self, env: dict, log: Path, queues: str = "events,steps") -> None:
        self.env, self.log, self.queues = env, log, queues
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> "WorkerProcess":
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(
                [str(LABRXIV), "worker", "--queues", self.queues, "-c", "1", "-P", "prefork"],
                env=self.env,
                cwd=self.log.parent,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        return self

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        """SIGKILL the worker and its pool children (its process group) and reap it."""
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(timeout=10)

    def text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def tail(self, lines: int = 60) -> str:
        return "\n".join(self.text().splitlines()[-lines:])


def wait_for(
    what: str,
    ready: Callable[[], bool],
    worker: WorkerProcess,
    deadline: float = 60.0,
    every: float = 0.1,
) -> None:
    """Poll `ready` until it holds; fail with the worker's log after `deadline` seconds,
    or as soon as the worker process has exited."""
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        if ready():
            return
        if not worker.alive():
            pytest.fail(f"the worker exited while waiting for: {what}\n{worker.tail()}")
        time.sleep(every)
    pytest.fail(f"not within {deadline:.0f}s: {what} ({ready})\n{worker.tail()}")
