"""The campaign watcher: its live table is the runs read model, kept current by the watcher
itself, and never a re-read of the run streams; safe beside a projector process."""

import io
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from sqlalchemy import select

from events import Event, EventStore
from events.ids import new_id, utcnow
from events.payloads import CampaignFinished, CampaignStarted, Payload
from labrxiv.campaigns import CampaignEnd, run_campaign
from labrxiv.settings import load_settings
from labrxiv.wiring import Embedded, open_embedded
from projections.catalogue import all_projectors
from projections.runner import ProjectionRunner
from projections.runs import RunView, runs_of
from workers.lab.campaign import CampaignPlan

PLAN = CampaignPlan(task="continual-digits", labs=3, papers=2, mode="archive", seed=2, attempts=4)


class SpyStore(EventStore):
    """An event store that remembers every stream read with `read_stream`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.reads: list[tuple[str, int]] = []
        """(stream, after_version) of every `read_stream`."""

    def read_stream(self, stream: str, after_version: int = -1, **kwargs: Any) -> list[Event]:
        self.reads.append((stream, after_version))
        return super().read_stream(stream, after_version, **kwargs)


@pytest.fixture
def system(tmp_path: Path, store_url: str) -> Iterator[Embedded]:
    """The embedded system (bus threads do the labs' work) on SQLite or PostgreSQL."""
    embedded = open_embedded(
        load_settings(data_dir=tmp_path / "data", database_url=store_url), threads=3
    )
    yield embedded
    embedded.close()


def table_rows(store: EventStore) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every read model, in primary-key order."""
    found = {}
    with store.engine.connect() as conn:
        for projector in all_projectors():
            for table in projector.tables:
                order = list(table.primary_key.columns) or list(table.columns)
                found[table.name] = [tuple(r) for r in conn.execute(select(table).order_by(*order))]
    return found


def shown(run: RunView) -> list[str]:
    """The cells of `run`'s line in the watcher's table."""
    return [
        run.lab or run.stream,
        str(run.steps),
        f"{run.attempts}/{PLAN.attempts}",
        f"{run.papers}/{PLAN.papers}",
        "-" if run.best_score is None else f"{run.best_score:.3f}",
        f"{run.elapsed_seconds:.1f}s",
        f"finished ({run.finish_reason})",
    ]


def has_row(out: str, cells: list[str]) -> bool:
    """Whether a table line holds `cells` in order, whatever the box characters."""
    pattern = r"\W+".join(re.escape(cell) for cell in cells)
    return re.search(rf"(?m)^\W*{pattern}\W", out) is not None


@pytest.mark.slow
def test_the_table_is_the_runs_read_model_and_no_run_stream_is_read(system: Embedded) -> None:
    watcher = SpyStore.from_url(system.store.engine.url.render_as_string(hide_password=False))
    out = io.StringIO()
    console = Console(file=out, width=200, force_terminal=False)
    outcome = run_campaign(system.bus, watcher, PLAN, console, timeout=300)
    system.bus.join()
    assert outcome.finished and not system.bus.failures

    # The watcher read one stream, the campaign's, and only what was new each time.
    assert {stream for stream, _after in watcher.reads} == {f"campaign-{outcome.campaign}"}
    # Its last table came from the runs read model, caught up to the campaign's end.
    with watcher.engine.connect() as conn:
        runs = runs_of(conn, campaign=outcome.campaign)
    assert [r.stream for r in runs] == outcome.runs
    assert all(r.finished and r.papers == PLAN.papers for r in runs)
    final = out.getvalue()
    for run in runs:
        assert has_row(final, shown(run)), (shown(run), final)
    # ... built page by page while the labs ran, and equal to a rebuild from the log.
    system.runner.catch_up()
    incremental = table_rows(system.store)
    system.runner.rebuild()
    assert table_rows(system.store) == incremental
    watcher.engine.dispose()


@pytest.mark.slow
def test_the_watcher_beside_a_projector_process(system: Embedded) -> None:
    """A `labrxiv projector` following the log with every read model while the watcher
    catches up `runs`: they take turns at the runs checkpoint and no event is applied twice."""
    url = system.store.engine.url.render_as_string(hide_password=False)
    projector = ProjectionRunner(EventStore.from_url(url), all_projectors(), page=5)
    done = threading.Event()
    errors: list[Exception] = []

    def follow() -> None:
        try:
            while not done.is_set():
                projector.catch_up()
                time.sleep(0.05)
        except Exception as exc:  # a projector that died would leave the watcher alone
            errors.append(exc)

    thread = threading.Thread(target=follow, name="projector")
    thread.start()
    try:
        watcher = EventStore.from_url(url)
        outcome = run_campaign(system.bus, watcher, PLAN, Console(file=io.StringIO()), 300)
    finally:
        done.set()
        thread.join()
    system.bus.join()
    assert outcome.finished and not system.bus.failures
    assert not errors
    system.runner.catch_up()
    incremental = table_rows(system.store)
    with system.store.engine.connect() as conn:
        counts = {r.stream: r.event_count for r in runs_of(conn, campaign=outcome.campaign)}
    assert counts == {s: len(system.store.read_stream(s)) for s in outcome.runs}
    system.runner.rebuild()
    assert table_rows(system.store) == incremental
    projector.store.engine.dispose()
    watcher.engine.dispose()


def test_the_campaign_end_reads_each_event_once(tmp_path: Path) -> None:
    store = SpyStore.from_url(f"sqlite:///{tmp_path / 'log.db'}")
    end = CampaignEnd(store, "c1")

    def append(version: int, payload: Payload) -> None:
        event = Event(
            id=new_id(),
            stream="campaign-c1",
            version=version,
            occurred_at=utcnow(),
            payload=payload,
        )
        store.append([event])

    assert not end.reached()  # nothing recorded yet
    append(0, CampaignStarted(task="t", labs=1, mode="isolated"))
    assert not end.reached() and not end.reached()
    append(1, CampaignFinished(reason="done"))
    assert end.reached() and end.reached()
    # Each look reads after the last version seen; none once the end was seen.
    assert store.reads == [("campaign-c1", after) for after in (-1, -1, 0, 0)]
    assert end.version == 1
