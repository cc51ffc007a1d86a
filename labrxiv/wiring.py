"""Builds the store, bus and worker context from settings: the one place that wires parts."""

import functools
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from celery import Celery

from events import EventStore
from labrxiv.errors import Unreachable
from labrxiv.settings import Settings
from labrxiv.urls import hide_password
from projections.catalogue import all_projectors
from projections.runner import ProjectionRunner
from workers.app import make_celery, register_tasks
from workers.bus.base import Bus
from workers.bus.celery import CeleryBus
from workers.bus.local import LocalBus
from workers.bus.processes import Child, Fleet
from workers.context import WorkerContext
from workers.gym.registry import builtin_gym_dir
from workers.handlers import run_handler
from workers.lab.archive_log import LogArchive
from workers.lab.lease import Leases
from workers.lab.services import LabServices
from workers.llm import Gateway, PriceTable
from workers.reactions import REACTIONS
from workers.reactor import Reactor
from workers.sandbox import cgroup


@dataclass
class Embedded:
    """Everything in one process: store, in-process bus, worker context, projections."""

    store: EventStore
    bus: LocalBus | Fleet
    """The threads of this process, or worker processes beside it (`open_fleet`)."""
    ctx: WorkerContext
    runner: ProjectionRunner

    def settle(self) -> None:
        """Wait for every queued task and every reaction from the log, then bring the read
        models up to date."""
        while True:
            self.bus.join()
            if self.ctx.reactor is None or not self.ctx.reactor.catch_up():
                break
        self.runner.catch_up()

    def close(self) -> None:
        """Stop the bus threads and close database connections."""
        self.bus.close()
        self.store.engine.dispose()


def worker_context(settings: Settings, store: EventStore, bus: Bus) -> WorkerContext:
    """A worker's context: the recorder, and lab steps with their services and reactions."""
    prices = functools.cache(lambda: PriceTable.load(settings.prices))
    labs = LabServices(
        workspaces=(settings.data_dir / "workspaces").resolve(),
        gym_dirs=gym_dirs(settings),
        archive=LogArchive(store),
        hidden=[settings.data_dir.resolve()],
        gateways=gateways(settings, prices),
        prices=prices,
        inflight=(settings.data_dir / "inflight").resolve(),
        sandbox=settings.sandbox,
    )
    reactor, leases = reactions(settings, store, bus)
    return WorkerContext(
        store=store,
        bus=bus,
        reactor=reactor,
        leases=leases,
        max_message_bytes=settings.max_message_bytes,
        labs=labs,
    )


def reactions(settings: Settings, store: EventStore, bus: Bus) -> tuple[Reactor, Leases]:
    """The lab reactions from the log, and the leases that tell a step being taken from a
    stalled one (held for `stall_seconds`)."""
    return Reactor(store, bus, REACTIONS), Leases(store, ttl=settings.stall_seconds)


def gateways(
    settings: Settings, prices: Callable[[], PriceTable]
) -> Callable[[str | None], Gateway]:
    """One gateway per endpoint in this process, made on first use."""
    made: dict[str, Gateway] = {}
    lock = threading.Lock()

    def gateway(base_url: str | None) -> Gateway:
        url = base_url or settings.openai_base_url
        with lock:
            if url not in made:
                key = settings.openai_api_key
                made[url] = Gateway(
                    url,
                    key.get_secret_value() if key else None,
                    prices(),
                    timeout=settings.llm_timeout,
                    max_attempts=settings.llm_max_attempts,
                )
            return made[url]

    return gateway


def gym_dirs(settings: Settings) -> list[Path]:
    """The built-in task folder, then the user's (LABRXIV_GYM_PATH)."""
    return [builtin_gym_dir(), *settings.gym_path]


def open_store(settings: Settings, **engine: Any) -> EventStore:
    """The event store the settings name, with its tables created (`engine`: options
    for its database engine)."""
    return EventStore.from_url(settings.store_url, **engine)


def open_runner(settings: Settings, store: EventStore | None = None) -> ProjectionRunner:
    """A projection runner over every shipped read model."""
    return ProjectionRunner(store or open_store(settings), all_projectors())


def open_embedded(settings: Settings, threads: int = 2) -> Embedded:
    """Start the embedded system: SQLite (or the configured database) and a local bus."""
    # SQLite: a connection kept open for each bus thread, a lease's renewer and the
    # watcher beside them (more are opened when needed: `events.engines`).
    sqlite = settings.store_url.startswith("sqlite")
    store = open_store(settings, **({"pool_size": threads + 4} if sqlite else {}))
    bus = LocalBus(threads=threads)
    ctx = worker_context(settings, store, bus)
    bus.start(lambda task, args: run_handler(ctx, task, args))
    return Embedded(store=store, bus=bus, ctx=ctx, runner=open_runner(settings, store))


SPARE_THREADS = 2
"""Bus threads an embedded system has beyond one a run (and one an agent's session):
spare threads record the labs' events and send their next steps while every lab's step
waits on its model (queued behind those steps, they added ~0.1 s to each call of 10 llm
labs)."""
LABS_A_PROCESS = 25
"""Runs at once that make an embedded system take one more worker process."""
MAX_PROCESSES = 16
"""The most worker processes (`--processes`): a pipe runs from each process to each
child, about 2·N² open files while they start, within a normal user's usual 1,024."""


def processes_for(runs: int, agent: bool, given: int | None = None) -> int:
    """How many worker processes the steps of `runs` runs at once take on the embedded
    default: `given`, else one per `LABS_A_PROCESS` runs up to the cores this process may
    use (one process's steps share one interpreter lock: bench/embedded_scale.py); one
    for agent runs, whose sessions hold a thread and a sandbox each for the whole run."""
    if given is not None:
        return given
    if agent:
        return 1
    cores = min(len(os.sched_getaffinity(0)), MAX_PROCESSES)
    return max(1, min(cores, -(-runs // LABS_A_PROCESS)))


def open_working(
    settings: Settings, runs: int, agent: bool, processes: int | None = None
) -> Embedded:
    """The embedded system for `runs` runs taking steps at once: a bus thread a run (and
    one a session: an agent's holds its thread to its end) and spare ones, in worker
    processes where `processes_for` says so (`ChildDied` if one ended while starting),
    each with a thread for every run (runs are spread by a hash, not evenly)."""
    sessions = runs + 1 if agent else 0
    threads = max(2, runs) + sessions + SPARE_THREADS
    fleet = processes_for(runs, agent, processes)
    if fleet > 1:
        return open_fleet(settings, fleet, threads)
    return open_embedded(settings, threads=threads)


def open_fleet(settings: Settings, processes: int, threads: int) -> Embedded:
    """Start the embedded system with its steps in `processes` worker processes of
    `threads` bus threads each (`workers.bus.processes`): this process watches, records
    its own events and projects."""
    store = open_store(settings)
    fleet = Fleet(_serve_child, (settings,), processes, threads)
    ctx = worker_context(settings, store, fleet)
    fleet.run_here(lambda task, args: run_handler(ctx, task, args))
    return Embedded(store=store, bus=fleet, ctx=ctx, runner=open_runner(settings, store))


def _serve_child(settings: Settings, child: Child) -> None:
    """One worker process of a fleet: an embedded worker taking the tasks it is sent."""
    sqlite = settings.store_url.startswith("sqlite")
    store = open_store(settings, **({"pool_size": child.threads + 4} if sqlite else {}))
    cgroup.probe()  # why a call's tree has no cgroup was said by the parent, once
    local = LocalBus(threads=child.threads, on_done=child.done)
    ctx = worker_context(settings, store, child.bus(local))
    local.start(lambda task, args: run_handler(ctx, task, args))
    try:
        child.serve(local)
    finally:
        store.engine.dispose()


def open_bus(settings: Settings) -> Bus:
    """A producer's bus: Celery on Redis when configured (`Unreachable` if it does not
    answer: a command with nothing to send would not find out), else the embedded one."""
    if settings.redis_url is None:
        return open_embedded(settings).bus
    require_redis(settings.redis_url)
    return CeleryBus(make_celery(settings.redis_url, settings.visibility_timeout))


class ProcessContext:
    """A worker context built lazily in each worker process (engines do not survive fork)."""

    def __init__(self, settings: Settings, bus: Bus) -> None:
        self.settings = settings
        self.bus = bus
        self._ctx: WorkerContext | None = None
        self._pid = 0

    def __call__(self) -> WorkerContext:
        if self._ctx is None or self._pid != os.getpid():
            # No ping on every connection checkout (a round trip before each query):
            # a task whose pooled connection died gets OperationalError, which the
            # task wrapper retries with backoff on a fresh connection.
            store = open_store(self.settings, pool_pre_ping=False)
            self._ctx = worker_context(self.settings, store, self.bus)
            self._pid = os.getpid()
        return self._ctx


def require_redis(url: str) -> None:
    """Ping the broker once; `Unreachable` naming the URL when it does not answer (a
    Celery worker retried 100 times, logging its transport's class for the URL)."""
    import redis

    client = redis.Redis.from_url(url, socket_connect_timeout=5, socket_timeout=5)
    try:
        client.ping()
    except redis.RedisError as exc:
        reason = f"{exc} (check LABRXIV_REDIS_URL)"
        raise Unreachable(f"cannot reach Redis at {hide_password(url)}: {reason}") from None
    finally:
        client.close()


def celery_worker_app(settings: Settings) -> Celery:
    """The Celery app a `labrxiv worker` process runs, with every task registered, once
    its broker answers."""
    if settings.redis_url is None:
        raise ValueError("LABRXIV_REDIS_URL is not set: a worker needs Redis")
    require_redis(settings.redis_url)
    app = make_celery(settings.redis_url, settings.visibility_timeout)
    register_tasks(app, ProcessContext(settings, CeleryBus(app)))
    return app
