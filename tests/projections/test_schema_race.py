"""Processes started together on a fresh PostgreSQL database create the read models',
the reactor's and the leases' tables at the same moment: none of them dies
(of `UniqueViolation` on `pg_type_typname_nsp_index`, as a projector can)."""

import threading

import pytest

from events import EventStore
from projections.catalogue import all_projectors
from projections.runner import ProjectionRunner
from workers.bus.local import LocalBus
from workers.lab.lease import Leases
from workers.reactor import Reactor

pytestmark = pytest.mark.postgres


def test_runners_reactors_and_leases_create_their_tables_together(pg_url: str) -> None:
    starters = 8
    barrier = threading.Barrier(starters)
    errors: list[BaseException] = []

    def start(index: int) -> None:
        store = None
        try:
            barrier.wait(timeout=60)
            store = EventStore.from_url(pg_url)  # the log's own tables, at once too
            if index % 3 == 0:
                ProjectionRunner(store, all_projectors()).catch_up()
            elif index % 3 == 1:
                Reactor(store, LocalBus(threads=1), []).catch_up()
            else:
                Leases(store).live(["run-x"])
        except BaseException as exc:  # noqa: BLE001 - collected for the assertion
            errors.append(exc)
        finally:
            if store is not None:
                store.engine.dispose()

    threads = [threading.Thread(target=start, args=(i,)) for i in range(starters)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
