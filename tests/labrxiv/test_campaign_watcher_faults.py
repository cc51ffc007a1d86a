"""The campaign watcher under a database fault: a dropped connection
costs it some ticks, never its life, and with it the reaping of its campaign."""

import io
import logging
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from sqlalchemy import event
from sqlalchemy.exc import OperationalError

from events import EventStore
from labrxiv.campaigns import run_campaign
from labrxiv.settings import load_settings
from labrxiv.wiring import Embedded, open_embedded
from projections.runs import runs_of
from workers.lab.campaign import CampaignPlan

PLAN = CampaignPlan(task="continual-digits", labs=2, papers=1, mode="isolated", seed=4, attempts=2)


class BlippingStore(EventStore):
    """A watcher's store whose database goes away for `statements` statements, as one
    that drops its connections, from its first look at the campaign stream on (so the
    watcher is in its loop, its set-up done)."""

    statements = 12

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.armed = False
        self.failed = 0
        event.listen(self.engine, "before_cursor_execute", self._before)

    def read_stream(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().read_stream(*args, **kwargs)
        finally:
            self.armed = True

    def _before(self, _conn: Any, _cursor: Any, statement: str, params: Any, *_: Any) -> None:
        if self.armed and self.failed < self.statements:
            self.failed += 1
            raise OperationalError(statement, params, sqlite3.OperationalError("disk I/O error"))


@pytest.fixture
def system(tmp_path: Path) -> Iterator[Embedded]:
    """The embedded system: its bus threads do the labs' work on their own engine."""
    embedded = open_embedded(load_settings(data_dir=tmp_path / "data"), threads=2)
    yield embedded
    embedded.close()


def test_the_watcher_survives_a_dropped_connection_and_sees_its_campaign_end(
    system: Embedded, caplog: pytest.LogCaptureFixture
) -> None:
    url = system.store.engine.url.render_as_string(hide_password=False)
    watcher = BlippingStore.from_url(url)
    caplog.set_level(logging.WARNING, logger="labrxiv.campaigns")

    outcome = run_campaign(system.bus, watcher, PLAN, Console(file=io.StringIO()), timeout=300)

    system.bus.join()
    assert watcher.failed == BlippingStore.statements, "the database was away a while"
    assert outcome.finished and not system.bus.failures
    with watcher.engine.connect() as conn:
        runs = runs_of(conn, campaign=outcome.campaign)
    assert [(r.stream, r.finish_reason) for r in runs] == [(s, "done") for s in outcome.runs]
    said = [r.getMessage() for r in caplog.records if r.name == "labrxiv.campaigns"]
    assert said and all("disk I/O error" in line for line in said)
    watcher.engine.dispose()


def test_an_error_that_is_no_fault_of_the_database_still_stops_the_watcher(
    system: Embedded,
) -> None:
    """Only transient faults are waited out: a bug is not hidden behind a retry loop."""
    url = system.store.engine.url.render_as_string(hide_password=False)
    watcher = EventStore.from_url(url)

    def broken(*_args: Any, **_kwargs: Any) -> None:
        raise ValueError("a bug in the watcher")

    watcher.read_stream = broken  # type: ignore[method-assign]
    with pytest.raises(ValueError, match="a bug in the watcher"):
        run_campaign(system.bus, watcher, PLAN, Console(file=io.StringIO()), timeout=300)
    system.bus.join()
    watcher.engine.dispose()
