"""Lab steps under a database fault: with PostgreSQL terminating connections, an
`OperationalError` while reading papers for the archive search must not be turned into
`run.finished reason=error` by the step, for good. A transient
fault must be retried (the whole step, from the log, by the task wrapper); only the
lab's own errors end a run with `error`.

The labs run on a real Celery worker (in a thread of this process, consuming Redis), so
the retry is the production one: the task wrapper's, with its backoff.
"""

import io
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest
from celery.contrib.testing.worker import start_worker
from rich.console import Console
from sqlalchemy.engine import make_url
from sqlalchemy.exc import OperationalError

from events import EventStore
from labrxiv.campaigns import run_campaign
from labrxiv.settings import Settings, load_settings
from labrxiv.wiring import open_store, worker_context
from runstate import fold
from workers.app import make_celery, register_tasks
from workers.bus.celery import CeleryBus
from workers.context import WorkerContext
from workers.lab.campaign import CampaignPlan, start_campaign
from workers.tools.env import Archive, ArchiveScope, PaperHit

pytestmark = [pytest.mark.redis]

DEADLINE = 120.0
PG_ADMIN = os.environ.get("LABRXIV_TEST_PG", "postgresql://postgres@127.0.0.1:5432/postgres")


@dataclass
class Cluster:
    """A Celery worker on Redis in this process, taking steps and recording events."""

    store: EventStore
    bus: CeleryBus
    ctx: WorkerContext


@pytest.fixture
def cluster(tmp_path: Path, redis_url: str) -> Iterator[Cluster]:
    with running(load_settings(data_dir=tmp_path / "data", redis_url=redis_url)) as made:
        yield made


@contextmanager
def running(settings: Settings) -> Iterator[Cluster]:
    assert settings.redis_url is not None
    app = make_celery(settings.redis_url, settings.visibility_timeout)
    bus = CeleryBus(app)
    store = open_store(settings)
    ctx = worker_context(settings, store, bus)
    register_tasks(app, lambda: ctx)
    with start_worker(
        app,
        pool="threads",
        concurrency=4,
        perform_ping_check=False,
        queues=["events", "steps"],
        loglevel="WARNING",
        shutdown_timeout=30,
    ):
        yield Cluster(store, bus, ctx)
    store.engine.dispose()


class BlippingArchive:
    """The archive as a database blip leaves it: its first `failures` reads raise what
    PostgreSQL's terminated connections raise."""

    def __init__(self, archive: Archive, failures: int) -> None:
        self.archive = archive
        self.failures = failures
        self.failed = 0
        self._lock = threading.Lock()

    def _blip(self) -> None:
        with self._lock:
            if self.failed >= self.failures:
                return
            self.failed += 1
        cause = psycopg.OperationalError("terminating connection due to administrator command")
        raise OperationalError("SELECT … FROM events", {}, cause)

    def search(self, scope: ArchiveScope, query: str, k: int) -> list[PaperHit]:
        self._blip()
        return self.archive.search(scope, query, k)

    def get(self, paper_id: str) -> dict[str, Any] | None:
        self._blip()
        return self.archive.get(paper_id)


def wait_for(what: str, ready: Callable[[], bool], seconds: float = DEADLINE) -> None:
    deadline = time.monotonic() + seconds
    while not ready():
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: not within {seconds:.0f} s")
        time.sleep(0.2)


def finished(store: EventStore, runs: list[str]) -> Callable[[], bool]:
    def ready() -> bool:
        streams = [store.read_stream(run) for run in runs]
        return all(events and fold(events).finished is not None for events in streams)

    return ready


def test_a_database_blip_in_a_step_is_retried_and_ends_no_run(
    cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    archive = BlippingArchive(cluster.ctx.labs.archive, failures=4)
    cluster.ctx.labs.archive = archive
    caplog.set_level("WARNING", logger="workers.app")
    plan = CampaignPlan(
        task="continual-digits", labs=2, papers=1, mode="archive", seed=3, attempts=3
    )

    _campaign, runs = start_campaign(cluster.bus, plan)
    wait_for("every run finishes", finished(cluster.store, runs))

    for run in runs:
        state = fold(cluster.store.read_stream(run))
        assert state.finished is not None
        assert state.finished.reason == "done", state.finished.detail
        assert len(state.papers) == plan.papers
        assert len(state.attempts) == plan.attempts
    assert archive.failed == archive.failures, "the steps did meet the blip"
    retried = [r.getMessage() for r in caplog.records if "retrying" in r.getMessage()]
    assert len(retried) == archive.failures
    assert all("labrxiv.lab_step" in m and "terminating connection" in m for m in retried)


def test_a_bug_in_a_step_still_ends_its_run_with_error(cluster: Cluster) -> None:
    """Not every exception is waited out: the lab's own error ends its run, with a reason."""

    class Broken:
        def search(self, *args: Any, **kwargs: Any) -> list[PaperHit]:
            raise KeyError("title")

        def get(self, *args: Any, **kwargs: Any) -> dict[str, Any] | None:
            raise KeyError("title")

    cluster.ctx.labs.archive = Broken()
    plan = CampaignPlan(
        task="continual-digits", labs=1, papers=1, mode="archive", seed=3, attempts=2
    )
    _campaign, runs = start_campaign(cluster.bus, plan)
    wait_for("the run finishes", finished(cluster.store, runs))
    state = fold(cluster.store.read_stream(runs[0]))
    assert state.finished is not None
    assert (state.finished.reason, state.finished.detail) == ("error", "KeyError: 'title'")


class Watcher(EventStore):
    """The watcher's store, which says when the watcher first looked at its campaign (it
    is in its loop then, its set-up done)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.looked = threading.Event()

    def read_stream(self, *args: Any, **kwargs: Any) -> Any:
        self.looked.set()
        return super().read_stream(*args, **kwargs)


class Outage(threading.Thread):
    """PostgreSQL away for `seconds` (15 s in the outage it stands for): new connections to
    the database refused and every open one terminated, once `ready()` says so."""

    def __init__(self, url: str, ready: Callable[[], bool], seconds: float) -> None:
        super().__init__(name="outage", daemon=True)
        self.database = make_url(url).database
        self.ready, self.seconds = ready, seconds
        self.terminated = 0
        self.over = threading.Event()
        """Set once connections are accepted again (or the outage never came)."""
        self.looks: list[str] = []
        """What the looks for the moment to begin raised, if anything."""

    def _ready(self) -> bool:
        try:
            return self.ready()
        except Exception as exc:  # e.g. the server busy with other tests: look again
            self.looks.append(f"{type(exc).__name__}: {exc}")
            return False

    def run(self) -> None:
        try:
            deadline = time.monotonic() + DEADLINE
            while not self._ready():
                if time.monotonic() > deadline:
                    return
                time.sleep(0.1)
            with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
                admin.execute(f'ALTER DATABASE "{self.database}" WITH ALLOW_CONNECTIONS false')
                try:
                    killed = admin.execute(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                        " WHERE datname = %s AND pid <> pg_backend_pid()",
                        (self.database,),
                    ).fetchall()
                    self.terminated = len(killed)
                    time.sleep(self.seconds)  # the outage itself
                finally:
                    admin.execute(f'ALTER DATABASE "{self.database}" WITH ALLOW_CONNECTIONS true')
        finally:
            self.over.set()


@pytest.mark.postgres
@pytest.mark.slow
def test_a_postgresql_outage_mid_campaign_ends_no_run_and_not_the_watcher(
    tmp_path: Path, redis_url: str, pg_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A PostgreSQL outage, shortened: every connection terminated and none accepted for 3 s
    while the labs search the archive, the recorder appends and the watcher watches."""
    settings = load_settings(data_dir=tmp_path / "data", redis_url=redis_url, database_url=pg_url)
    caplog.set_level(logging.WARNING)
    plan = CampaignPlan(
        task="continual-digits", labs=2, papers=1, mode="archive", seed=5, attempts=4
    )
    with running(settings) as cluster:
        store = cluster.store
        watcher = Watcher.from_url(pg_url)

        def watched_and_scored() -> bool:
            looked = watcher.looked.is_set()
            return looked and bool(list(store.iter_records(types=["experiment.scored"])))

        outage = Outage(pg_url, watched_and_scored, seconds=3.0)
        outage.start()
        outcome = run_campaign(
            cluster.bus, watcher, plan, Console(file=io.StringIO()), 180, stall_seconds=10
        )
        assert outage.over.wait(DEADLINE), "the database came back"
        watcher.engine.dispose()

    assert outage.terminated > 0, (outcome, outage.looks[-3:])
    assert outcome.finished
    for run in outcome.runs:
        state = fold(store.read_stream(run))
        assert state.finished is not None and state.finished.reason == "done", state.finished
    said = [r.getMessage() for r in caplog.records if r.name == "labrxiv.campaigns"]
    assert said, "the watcher met the outage and lived"
    retried = [r.getMessage().split(":")[0] for r in caplog.records if r.name == "workers.app"]
    print(
        f"PostgreSQL away {outage.seconds:.0f} s ({outage.terminated} connections terminated):"
        f" {retried.count('labrxiv.lab_step')} step and {retried.count('labrxiv.record')}"
        f" recorder retries, {len(said)} watcher ticks lost; every run done; campaign"
        f" {outcome.seconds:.1f} s"
    )
