"""`labrxiv worker`'s node name: each process has a name of its own unless given one
(`-n`), so workers on one host are not all `celery@<host>` (DuplicateNodenameWarning; a
broadcast could not tell them apart)."""

import os
import subprocess
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from celery.exceptions import DuplicateNodenameWarning
from typer.testing import CliRunner

from labrxiv.cli import WORKER_QUEUES, app
from tests.needs import missing
from workers.app import make_celery
from workers.handlers import HANDLERS

LABRXIV = Path(sys.executable).with_name("labrxiv")


class FakeCelery:
    """Stands in for the worker's Celery app: keeps the command line it was given."""

    def __init__(self) -> None:
        self.argv: list[str] = []

    def worker_main(self, argv: list[str]) -> None:
        self.argv = argv


@pytest.fixture
def worker_argv(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, redis_url: str
) -> Callable[..., list[str]]:
    """The Celery command line `labrxiv worker *options` runs (Redis and a database that
    answer: the worker checks both before it starts)."""

    def argv(*options: str) -> list[str]:
        fake = FakeCelery()
        monkeypatch.setattr("labrxiv.wiring.celery_worker_app", lambda _settings: fake)
        env = {k: None for k in os.environ if k.startswith("LABRXIV_")}
        env |= {"LABRXIV_REDIS_URL": redis_url, "LABRXIV_DATA_DIR": str(tmp_path)}
        env["LABRXIV_DATABASE_URL"] = f"sqlite:///{tmp_path / 'log.db'}"
        result = CliRunner().invoke(app, ["worker", *options], env=env)
        assert result.exit_code == 0, result.output
        return fake.argv

    return argv


def name_in(argv: list[str]) -> str:
    assert argv.count("-n") == 1, argv
    return argv[argv.index("-n") + 1]


@pytest.mark.redis
def test_each_worker_is_named_apart_by_default(worker_argv: Callable[..., list[str]]) -> None:
    first = name_in(worker_argv())
    second = name_in(worker_argv())
    assert first != second, "two workers started alike must not share a name"
    for name in (first, second):
        node, host = name.split("@")
        assert node.startswith(f"labrxiv-{os.getpid()}-"), name  # the pid: which process
        assert host == "%h"  # Celery puts the host name there


@pytest.mark.redis
def test_a_name_can_be_given(worker_argv: Callable[..., list[str]]) -> None:
    assert name_in(worker_argv("-n", "steps-1@%h")) == "steps-1@%h"
    argv = worker_argv("--name", "recorder@box", "-Q", "events")
    assert name_in(argv) == "recorder@box" and argv[argv.index("-Q") + 1] == "events"


@pytest.mark.parametrize(
    ("options", "words"),
    [
        (["-Q", "events,step"], "--queues 'events,step': labrxiv's queues are events, steps"),
        (["-Q", ","], "--queues ',': labrxiv's queues"),
        (["-P", "badpool"], "--pool 'badpool': one of prefork, threads, solo"),
        (["-P", "gevent"], "--pool 'gevent': one of"),
        (["-P", "[/]"], "--pool '[/]': one of"),  # markup in the value: printed as it is
    ],
)
def test_a_wrong_queue_or_pool_is_one_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, options: list[str], words: str
) -> None:
    """Found running labrxiv from outside: a misspelt queue was consumed silently (nothing
    took the real one's steps and the campaign stalled) and a pool Celery cannot load
    ended in a 200-line traceback."""
    fake = FakeCelery()
    monkeypatch.setattr("labrxiv.wiring.celery_worker_app", lambda _settings: fake)
    env = {k: None for k in os.environ if k.startswith("LABRXIV_")}
    env |= {"LABRXIV_REDIS_URL": "redis://127.0.0.1:1/0", "LABRXIV_DATA_DIR": str(tmp_path)}
    result = CliRunner().invoke(app, ["worker", *options], env=env)
    assert result.exit_code == 2 and words in " ".join(result.output.split()), result.output
    assert fake.argv == [], "no worker was started"


def test_a_steps_worker_says_its_sandbox_or_why_none_can_run(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, redis_url: str
) -> None:
    """A worker taking lab steps runs their tools: it says which sandbox in one line at
    start, and where the one asked for cannot run here, why, before taking any step."""
    from workers.sandbox.backends import choose, describe
    from workers.sandbox.base import SandboxUnavailable

    fake = FakeCelery()
    monkeypatch.setattr("labrxiv.wiring.celery_worker_app", lambda _settings: fake)
    env = {k: None for k in os.environ if k.startswith("LABRXIV_")}
    env |= {"LABRXIV_REDIS_URL": redis_url, "LABRXIV_DATA_DIR": str(tmp_path)}
    env["LABRXIV_DATABASE_URL"] = f"sqlite:///{tmp_path / 'log.db'}"
    try:
        chosen = choose("auto")
    except SandboxUnavailable as exc:
        missing(f"no sandbox works here: {exc}")
    result = CliRunner().invoke(app, ["worker", "-Q", "steps"], env=env)
    assert result.exit_code == 0, result.output
    assert describe(chosen) in " ".join(result.output.split())
    recorder = CliRunner().invoke(app, ["worker", "-Q", "events"], env=env)
    assert "sandbox:" not in recorder.output, "a recorder runs no tools"

    def unavailable(setting: str) -> None:
        raise SandboxUnavailable("unprivileged user namespaces are off here (…)")

    monkeypatch.setattr("labrxiv.cli_labs.choose", unavailable)
    fake.argv = []
    refused = CliRunner().invoke(app, ["worker", "-Q", "events,steps"], env=env)
    assert refused.exit_code == 2, refused.output
    said = " ".join(refused.output.split())
    assert said == "labs cannot run here: unprivileged user namespaces are off here (…)", said
    assert fake.argv == [], "no worker was started"


def test_the_worker_queues_are_the_handlers_queues() -> None:
    assert set(WORKER_QUEUES) == {queue for _, queue in HANDLERS.values()}


# -- two real workers on one host --------------------------------------------------------


@pytest.fixture
def two_workers(tmp_path: Path, redis_url: str) -> Iterator[list[subprocess.Popen[bytes]]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LABRXIV_")}
    env |= {
        "LABRXIV_REDIS_URL": redis_url,
        "LABRXIV_DATABASE_URL": f"sqlite:///{tmp_path / 'log.db'}",
        "LABRXIV_DATA_DIR": str(tmp_path / "data"),
    }
    started = []
    try:
        for index in range(2):
            with (tmp_path / f"worker-{index}.log").open("wb") as out:
                started.append(
                    subprocess.Popen(
                        [str(LABRXIV), "worker", "-Q", "steps", "-P", "solo"],
                        env=env,
                        cwd=tmp_path,
                        stdout=out,
                        stderr=subprocess.STDOUT,
                        start_new_session=True,
                    )
                )
        yield started
    finally:
        for proc in started:
            proc.terminate()
        for proc in started:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)


@pytest.mark.redis
@pytest.mark.slow
def test_two_workers_on_one_host_answer_as_two(
    two_workers: list[subprocess.Popen[bytes]], redis_url: str
) -> None:
    celery_app = make_celery(redis_url, visibility_timeout=60)
    deadline = time.monotonic() + 60
    replies: list[dict[str, Any]] = []
    # A connection of the test's own, closed at the end: the pool's would keep the
    # replies' consumer open after the test (`_no_consumer_left`).
    with warnings.catch_warnings(record=True) as warned, celery_app.connection_for_write() as conn:
        warnings.simplefilter("always")
        while time.monotonic() < deadline:
            assert all(p.poll() is None for p in two_workers), "a worker exited"
            replies = celery_app.control.ping(timeout=1.0, connection=conn)
            if len(replies) >= 2:
                break
    names = sorted(name for reply in replies for name in reply)
    assert len(names) == 2 and len(set(names)) == 2, names
    assert not [w for w in warned if issubclass(w.category, DuplicateNodenameWarning)]
