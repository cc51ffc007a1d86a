"""Wiring for `labrxiv analyze --inspector MODEL`: the LLM inspector
(`workers.inspect.run`) run on each analysed run through the configured log and bus, so
its calls are recorded, priced and budgeted like a lab's. The shell only wires."""

import functools
import time
from collections.abc import Callable

from analysis.finding import Finding
from analysis.inspection_tools import Inspected, Trajectory
from events import Event, EventStore
from events.payloads import InspectionConfig
from events.payloads.inspection import Verdict
from labrxiv.cli_common import settings_or_exit
from labrxiv.wiring import gateways, open_bus, open_embedded, open_store
from workers.bus.base import publish
from workers.inspect.run import Budget, InspectRun, new_stream
from workers.llm import PriceTable

RECORDED_WITHIN_S = 120.0
"""How long a published event may take to be in the log before the inspection gives up."""

Judged = tuple[str, tuple[Finding, ...], Verdict]
"""A run to inspect: its stream, the detectors' findings and verdict."""


def inspect_runs(
    runs: list[Judged],
    config: InspectionConfig,
    load: Callable[[str, int | None], list[Event]],
) -> list[Inspected]:
    """The inspector's verdict on each run, in order (one budget over all of them; the
    runs after it is reached are stopped, each with `inspection.stopped`). `load`: a
    stream's events, all of them (None) or up to a version (a fork's parent)."""
    settings = settings_or_exit()
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    embedded = open_embedded(settings) if settings.redis_url is None else None
    store = embedded.store if embedded is not None else open_store(settings)
    bus = embedded.bus if embedded is not None else open_bus(settings)

    def recorder(stream: str) -> Callable[[list[Event], dict[str, bytes]], None]:
        def record(events: list[Event], blobs: dict[str, bytes]) -> None:
            publish(bus, events, blobs)
            if embedded is not None:
                embedded.bus.join()
            _wait_recorded(store, stream, events[-1].version)

        return record

    prices = functools.cache(lambda: PriceTable.load(settings.prices))
    gateway = gateways(settings, prices)(config.base_url)
    budget = Budget(config, unpriced=gateway.prices.price_of(config.model) is None)
    out = []
    try:
        for run, findings, verdict in runs:
            stream = new_stream()
            inspection = InspectRun(
                run=run,
                trajectory=Trajectory(load(run, None), load),
                findings=findings,
                detectors_verdict=verdict,
                gateway=gateway,
                store=store,
                inflight=(settings.data_dir / "inflight").resolve(),
                record=recorder(stream),
                budget=budget,
                stream=stream,
            )
            out.append(inspection.inspect())
    finally:
        if embedded is not None:
            embedded.settle()  # the read models (the ledger) count the inspector's calls
            embedded.close()
        else:
            bus.close()
    return out


def _wait_recorded(store: EventStore, stream: str, version: int) -> None:
    deadline = time.monotonic() + RECORDED_WITHIN_S
    while True:
        last = store.last_record(stream)
        if last is not None and last.version >= version:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"{stream} v{version} was not recorded in time")
        time.sleep(0.05)
