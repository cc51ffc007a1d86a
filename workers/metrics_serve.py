"""A worker's metrics over HTTP: prometheus-client's multiprocess mode for a prefork pool.

Each process of the worker (the main one and every pool child) writes its counters to
memory-mapped files in a folder the worker owns (`PROMETHEUS_MULTIPROC_DIR`); the main
process sums the files at each scrape. Why this shape (prometheus-client's docs,
"Multiprocess Mode"):
- the variable must be set before `prometheus_client` is first imported, since the
  library picks its value class then: `use_folder` sets it, and refuses when too late;
- the folder's metric files are removed at start: an earlier worker's would be summed with ours;
- a child that dies keeps its counter and histogram files, and they stay in the sum:
  a child SIGKILLed mid-work loses none of the counts it made;
- a live gauge of a dead process must not be reported: `mark_process_dead` removes its
  files, on a child's normal exit (Celery's `worker_process_shutdown`) and, for a child
  killed without running it, at each scrape for every process that no longer exists;
- no custom collector may share the multiprocess registry (it would be read from the
  main process only); this registry holds the `MultiProcessCollector` alone.
"""

import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

ENV = "PROMETHEUS_MULTIPROC_DIR"


class TooLate(RuntimeError):
    """prometheus-client was imported before the multiprocess folder was chosen."""


def use_folder(folder: Path) -> None:
    """Make this process and its children count in `folder`, its metric files (`*.db`)
    from an earlier worker removed first.

    Must run before anything imports `prometheus_client` (e.g. `workers.metrics`)."""
    if "prometheus_client" in sys.modules:
        from prometheus_client import values

        if values.ValueClass is values.MutexValue:
            raise TooLate("prometheus_client was imported before the metrics folder was set")
    folder.mkdir(parents=True, exist_ok=True)
    for stale in folder.glob("*.db"):  # only prometheus-client's files: the folder is given
        stale.unlink()
    os.environ[ENV] = str(folder)


def serve(port: int, addr: str = "0.0.0.0") -> int:
    """Serve the sum of every process's metrics in the folder on `addr:port` (a thread
    of this process), and forget a child's live gauges when it exits normally; returns
    the port served (the one the system chose, for port 0)."""
    from celery.signals import worker_process_shutdown
    from prometheus_client import CollectorRegistry, start_http_server

    registry = CollectorRegistry()
    registry.register(_WorkerCollector(Path(os.environ[ENV])))
    server, _ = start_http_server(port, addr=addr, registry=registry)
    worker_process_shutdown.connect(_child_exited, weak=False)
    return int(server.server_port)


def _child_exited(**_: Any) -> None:
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(os.getpid())


class _WorkerCollector:
    """The folder's metrics, after the files of processes that are gone are marked dead."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def collect(self) -> Iterable[Any]:
        from prometheus_client import multiprocess

        for pid in dead_pids(self.folder):
            multiprocess.mark_process_dead(pid, str(self.folder))
        return multiprocess.MultiProcessCollector(None, str(self.folder)).collect()


def dead_pids(folder: Path) -> set[int]:
    """Processes with live-gauge files in `folder` that no longer exist."""
    pids = set()
    for path in folder.glob("gauge_live*_*.db"):
        pid = int(path.stem.rsplit("_", 1)[1])
        if not _alive(pid):
            pids.add(pid)
    return pids


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
