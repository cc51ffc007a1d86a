"""Fixtures for the CLI's tests: a clean directory, the CLI in process, a small log of
two campaigns (`cli_support`), a port that refuses connections."""

import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_support import Cli, Said, two_campaigns_events
from typer.testing import CliRunner

from events import EventStore
from labrxiv.cli import app


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty directory to run in, with no LABRXIV_* setting from the caller's shell."""
    for name in list(os.environ):
        if name.startswith("LABRXIV_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def cli(workdir: Path) -> Cli:
    """Run the CLI in this process, in `workdir`, with `settings` as LABRXIV_* variables."""

    def run(*args: str, **settings: str) -> Said:
        result = CliRunner().invoke(app, list(args), env=settings)
        return Said(result.exit_code, result.output, result.stdout, result.exception)

    return run


@pytest.fixture
def two_campaigns(workdir: Path, cli: Cli) -> EventStore:
    """The two campaigns' log in `workdir/.labrxiv`, read models caught up."""
    store = EventStore.from_url(f"sqlite:///{workdir / '.labrxiv' / 'labrxiv.db'}")
    store.append(two_campaigns_events())
    said = cli("projector", "--once")
    assert said.code == 0, said.out
    return store


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A local TCP port that refuses connections: bound, never listening, held for the test
    (a port merely found free could be taken by another process meanwhile)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield int(sock.getsockname()[1])
