"""`labrxiv projector` rides out PostgreSQL being away for seconds, as the reactor, the
workers and the campaign watcher do: it says so, tries again with the one retry policy's
backoff, and goes on applying once the database is back (found by the chaos suite: a
projector died at an outage and only came back if a later fault happened to restart it)."""

import os
from datetime import UTC, datetime
from pathlib import Path

import pytest
from chaos_support import Service, postgres_outage, wait_until

from events import EventStore
from projections.checkpoints import read_checkpoints
from projections.runs import RUNS
from tests.simulated import simulated_run

pytestmark = [pytest.mark.postgres]

START = datetime(2026, 1, 1, tzinfo=UTC)


def _checkpoints(store: EventStore) -> dict[str, int]:
    with store.engine.connect() as conn:
        return read_checkpoints(conn, ["runs", "findings"])


def _runs(store: EventStore) -> int:
    with store.engine.connect() as conn:
        return len(conn.execute(RUNS.select()).all())


def test_the_projector_outlives_a_postgresql_outage(pg_url: str, tmp_path: Path) -> None:
    store = EventStore.from_url(pg_url)
    store.append(list(simulated_run("before", START, attempts=2)))
    env = {k: v for k, v in os.environ.items() if not k.startswith("LABRXIV_")}
    env.update(LABRXIV_DATABASE_URL=pg_url, LABRXIV_DATA_DIR=str(tmp_path / "data"))
    projector = Service("projector", ["projector", "--poll", "0.1"], env, tmp_path).start()
    try:
        head = store.max_position()
        wait_until(
            "the projector caught up",
            lambda: set(_checkpoints(store).values()) == {head},
            [projector],
            120,
        )
        terminated = postgres_outage(pg_url, 3.0)
        assert terminated >= 1  # the projector's own connection was among them
        store.engine.dispose()  # this test's were terminated too
        store.append(list(simulated_run("after", START, attempts=2)))
        head = store.max_position()

        def caught_up() -> bool:
            if not projector.alive():  # no use waiting for a dead one
                pytest.fail(f"the projector died at the outage:\n{projector.tail()}")
            return set(_checkpoints(store).values()) == {head} and _runs(store) == 2

        wait_until("the projector applied what came after the outage", caught_up, [projector], 120)
        assert projector.alive(), projector.tail()
        said = projector.log.read_text()
        assert "projector: OperationalError" in said and "trying again in" in said
    finally:
        projector.kill()
        store.engine.dispose()
