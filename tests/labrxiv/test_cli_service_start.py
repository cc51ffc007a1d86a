"""`labrxiv worker`, `projector` and `reactor` check what they need at start, refuse in one
line (exit 2) when it does not answer, and say in one line that they are ready, with what.

Found running the distributed mode from the README: a worker whose database did not
answer said it was ready and then retried every step; one with no LABRXIV_DATABASE_URL
ran on a SQLite file of its own and never saw the shared log; the projector and the
reactor printed nothing at all when started."""

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from labrxiv.cli import app


class FakeCelery:
    """Stands in for the worker's Celery app: keeps the command line it was given."""

    def __init__(self) -> None:
        self.argv: list[str] = []

    def worker_main(self, argv: list[str]) -> None:
        self.argv = argv


def invoke(tmp_path: Path, *args: str, **settings: str) -> tuple[int, str]:
    """Exit code and one-spaced output of `labrxiv *args` with only `settings` set."""
    env: dict[str, str | None] = {k: None for k in os.environ if k.startswith("LABRXIV_")}
    env |= {"LABRXIV_DATA_DIR": str(tmp_path / "data"), "COLUMNS": "300", **settings}
    result = CliRunner().invoke(app, list(args), env=env)
    return result.exit_code, " ".join(result.output.split())


@pytest.fixture
def fake_celery(monkeypatch: pytest.MonkeyPatch) -> FakeCelery:
    fake = FakeCelery()
    monkeypatch.setattr("labrxiv.wiring.make_celery", lambda *_args, **_kw: fake)
    monkeypatch.setattr("labrxiv.wiring.register_tasks", lambda *_args: None)
    return fake


def away_pg(closed_port: int) -> str:
    return f"postgresql://postgres:secret@127.0.0.1:{closed_port}/labrxiv"


# -- worker --------------------------------------------------------------------------------


@pytest.mark.redis
@pytest.mark.parametrize("process", ["worker", "reactor"])
def test_a_process_on_redis_without_a_database_url_is_refused(
    tmp_path: Path, redis_url: str, fake_celery: FakeCelery, process: str
) -> None:
    code, out = invoke(tmp_path, process, LABRXIV_REDIS_URL=redis_url)
    assert code == 2, out
    assert f"LABRXIV_DATABASE_URL is not set: a {process} on Redis" in out, out
    assert fake_celery.argv == [], "no worker was started"
    assert not (tmp_path / "data" / "labrxiv.db").exists(), "no log of its own was made"


@pytest.mark.parametrize(
    "args",
    [
        ["campaign", "--task", "continual-digits", "--labs", "1"],
        ["fork", "run-x", "--at", "1"],
        ["resume"],
        ["projector"],
        ["projector", "--once"],
    ],
)
def test_a_command_on_redis_without_a_database_url_is_refused(
    tmp_path: Path, args: list[str]
) -> None:
    """A campaign sent to workers while watching a SQLite file of its own saw nothing of
    them until its timeout; a projector projected an empty local log."""
    code, out = invoke(tmp_path, *args, LABRXIV_REDIS_URL="redis://127.0.0.1:1/0")
    assert code == 2, out
    assert f"LABRXIV_DATABASE_URL is not set: a {args[0]} on Redis" in out, out
    assert not (tmp_path / "data" / "labrxiv.db").exists(), "no log of its own was made"


@pytest.mark.redis
def test_a_worker_whose_database_does_not_answer_is_refused(
    tmp_path: Path, redis_url: str, closed_port: int, fake_celery: FakeCelery
) -> None:
    database = away_pg(closed_port)
    code, out = invoke(
        tmp_path, "worker", LABRXIV_REDIS_URL=redis_url, LABRXIV_DATABASE_URL=database
    )
    assert code == 2, out
    assert f"cannot reach the database postgresql://postgres:***@127.0.0.1:{closed_port}" in out
    assert "secret" not in out and "Traceback" not in out
    assert fake_celery.argv == [], "no worker was started"


def test_a_worker_whose_redis_does_not_answer_is_refused(
    tmp_path: Path, closed_port: int, fake_celery: FakeCelery
) -> None:
    database = f"sqlite:///{tmp_path / 'log.db'}"
    away = f"redis://:secret@127.0.0.1:{closed_port}/0"
    code, out = invoke(tmp_path, "worker", LABRXIV_REDIS_URL=away, LABRXIV_DATABASE_URL=database)
    assert code == 2, out
    assert f"cannot reach Redis at redis://:***@127.0.0.1:{closed_port}/0" in out, out
    assert "secret" not in out
    assert fake_celery.argv == []


@pytest.mark.redis
@pytest.mark.postgres
def test_a_worker_says_it_is_ready_and_with_what(
    tmp_path: Path, redis_url: str, pg_url: str, fake_celery: FakeCelery
) -> None:
    with_password = pg_url.replace("postgres@", "postgres:hush@", 1)  # trust auth ignores it
    assert with_password != pg_url, pg_url
    code, out = invoke(
        tmp_path,
        "worker",
        "-Q",
        "events,steps",
        LABRXIV_REDIS_URL=redis_url,
        LABRXIV_DATABASE_URL=with_password,
    )
    assert code == 0, out
    shown = with_password.replace(":hush@", ":***@")
    assert f"worker ready: database {shown}, Redis {redis_url}, queues events, steps" in out, out
    assert "hush" not in out
    assert fake_celery.argv[:3] == ["worker", "-Q", "events,steps"]


# -- projector -------------------------------------------------------------------------------


def test_a_projector_whose_database_does_not_answer_is_refused(
    tmp_path: Path, closed_port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    followed: list[object] = []
    monkeypatch.setattr("labrxiv.projecting.follow", lambda *a, **kw: followed.append(a))
    code, out = invoke(tmp_path, "projector", LABRXIV_DATABASE_URL=away_pg(closed_port))
    assert code == 2, out
    assert f"cannot reach the database postgresql://postgres:***@127.0.0.1:{closed_port}" in out
    assert followed == []


def test_a_projector_says_it_is_ready_and_with_what(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    followed: list[object] = []
    monkeypatch.setattr("labrxiv.projecting.follow", lambda *a, **kw: followed.append(a))
    database = f"sqlite:///{tmp_path / 'log.db'}"
    redis = "redis://127.0.0.1:1/0"  # not the projector's: not looked at, not named
    code, out = invoke(
        tmp_path, "projector", LABRXIV_DATABASE_URL=database, LABRXIV_REDIS_URL=redis
    )
    assert code == 0, out
    assert f"projector ready: database {database}, polling every 0.5 s" in out, out
    assert len(followed) == 1


# -- reactor ---------------------------------------------------------------------------------


@pytest.mark.redis
def test_a_reactor_whose_database_does_not_answer_is_refused(
    tmp_path: Path, redis_url: str, closed_port: int
) -> None:
    database = away_pg(closed_port)
    code, out = invoke(
        tmp_path, "reactor", LABRXIV_REDIS_URL=redis_url, LABRXIV_DATABASE_URL=database
    )
    assert code == 2, out
    assert f"cannot reach the database postgresql://postgres:***@127.0.0.1:{closed_port}" in out


def test_a_reactor_whose_redis_does_not_answer_is_refused(tmp_path: Path, closed_port: int) -> None:
    database = f"sqlite:///{tmp_path / 'log.db'}"
    away = f"redis://127.0.0.1:{closed_port}/0"
    code, out = invoke(tmp_path, "reactor", LABRXIV_REDIS_URL=away, LABRXIV_DATABASE_URL=database)
    assert code == 2, out
    assert f"cannot reach Redis at {away}" in out, out


@pytest.mark.redis
def test_a_reactor_says_it_is_ready_and_with_what(
    tmp_path: Path, redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    followed: list[float] = []
    monkeypatch.setattr(
        "labrxiv.reacting.Reacting.follow",
        lambda _self, interval, stop=None: followed.append(interval),
    )
    database = f"sqlite:///{tmp_path / 'log.db'}"
    code, out = invoke(
        tmp_path, "reactor", LABRXIV_REDIS_URL=redis_url, LABRXIV_DATABASE_URL=database
    )
    assert code == 0, out
    assert f"reactor ready: database {database}, Redis {redis_url}" in out, out
    assert len(followed) == 1
