"""Fixtures for `labrxiv serve`'s tests: the small log (`serve_log`) in a data folder of
the test's own, its read models caught up, and the app over it in process."""

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from events import EventStore
from labrxiv.web.app import create_app
from projections.catalogue import all_projectors
from projections.runner import ProjectionRunner
from tests.web.serve_log import serve_events


def caught_up(store: EventStore) -> None:
    """Apply every event of the log to the read models, as `labrxiv projector` does."""
    runner = ProjectionRunner(store, all_projectors())
    runner.create_schema()
    runner.catch_up()


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def served_store(data_dir: Path) -> Iterator[EventStore]:
    """The small log in `data_dir/labrxiv.db`, its read models caught up."""
    store = EventStore.from_url(f"sqlite:///{data_dir / 'labrxiv.db'}")
    store.append(serve_events())
    caught_up(store)
    yield store
    store.engine.dispose()


@pytest.fixture
def client(served_store: EventStore) -> Iterator[TestClient]:
    with TestClient(create_app(served_store)) as test_client:
        yield test_client
