"""Wiring for `labrxiv reviewers eval --review-model`: the llm reviewer run on a data set's
papers through the configured log and bus (`workers.review.eval_run`), its answers as
predictions. The shell only wires: the run itself lives in `workers/review`."""

import functools
import time
import uuid

from analysis.reviewer_eval import HumanPaper, Prediction
from events import Event
from events.payloads import ReviewConfig
from events.streams import review_eval_stream
from labrxiv.cli_common import settings_or_exit
from labrxiv.wiring import gateways, open_bus, open_embedded, open_store
from workers.bus.base import publish
from workers.llm import PriceTable
from workers.review.eval_run import EvalRun

RECORDED_WITHIN_S = 120.0
"""How long a published event may take to be in the log before the run gives up."""


def run_reviewer(
    papers: list[HumanPaper], config: ReviewConfig
) -> tuple[list[Prediction], str | None, str]:
    """The reviewer's predictions for `papers` (those it gave a valid review), why it
    stopped early if it did, and the stream its calls were recorded in."""
    settings = settings_or_exit()
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    embedded = open_embedded(settings) if settings.redis_url is None else None
    store = embedded.store if embedded is not None else open_store(settings)
    bus = embedded.bus if embedded is not None else open_bus(settings)
    stream = review_eval_stream(uuid.uuid4().hex[:12])

    def record(events: list[Event], blobs: dict[str, bytes]) -> None:
        publish(bus, events, blobs)
        if embedded is not None:
            embedded.bus.join()
        deadline = time.monotonic() + RECORDED_WITHIN_S
        while True:
            last = store.last_record(stream)
            if last is not None and last.version >= events[-1].version:
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"{stream} v{events[-1].version} was not recorded in time")
            time.sleep(0.05)

    prices = functools.cache(lambda: PriceTable.load(settings.prices))
    run = EvalRun(
        stream=stream,
        gateway=gateways(settings, prices)(config.base_url),
        store=store,
        inflight=(settings.data_dir / "inflight").resolve(),
        record=record,
        config=config,
    )
    try:
        reviewed, stopped = run.review_all([(p.id, p.text) for p in papers])
    finally:
        if embedded is not None:
            embedded.close()
        else:
            bus.close()
    said = [  # no decision: the bar (`--accept-rating`) decides when they are scored
        Prediction(id=r.paper, rating=r.rating, decision=None)
        for r in reviewed
        if r.rating is not None
    ]
    return said, stopped, stream
