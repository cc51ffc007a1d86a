"""A distributed campaign is priced by the table of the command that started it, whatever
the workers' own settings.

Found running the distributed mode from the README: the campaign was started with
LABRXIV_PRICES naming the lab's model and a dollars budget; the workers, started without
it, found the model unpriced and ended every run with "a dollars budget cannot be kept …
it has no price". The campaign records its prices in each run's `run.started`, and every
worker prices and budgets the run by them."""

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_server import FakeServer
from test_llm_lab import KEY, _cycle
from test_llm_reviewers import Reviewer

from events import EventStore
from events.payloads import RunStarted

pytestmark = [pytest.mark.redis, pytest.mark.postgres, pytest.mark.slow]

LABRXIV = Path(sys.executable).with_name("labrxiv")
MODEL = "lab-custom"
"""A model the shipped price table does not know."""


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer(models=(MODEL,)) as running:
        yield running


def distributed_campaign(
    tmp_path: Path, server: FakeServer, redis_url: str, pg_url: str, *options: str
) -> tuple[EventStore, str]:
    """A one-lab llm campaign started with LABRXIV_PRICES pricing MODEL, taken by a worker
    started without it; the log's store and what the campaign and the worker said."""
    prices = tmp_path / "prices.toml"
    prices.write_text(f'[models."{MODEL}"]\ninput = 1.0\noutput = 2.0\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("LABRXIV_")}
    env |= {
        "LABRXIV_REDIS_URL": redis_url,
        "LABRXIV_DATABASE_URL": pg_url,
        "LABRXIV_DATA_DIR": str(tmp_path / "data"),
        "OPENAI_API_KEY": KEY,
        "OPENAI_BASE_URL": server.url,
        "COLUMNS": "200",
    }
    server.queue(*_cycle())
    log = tmp_path / "worker.log"
    with log.open("wb") as out:
        worker = subprocess.Popen(  # no LABRXIV_PRICES: the shipped table only
            [str(LABRXIV), "worker", "-c", "2", "-P", "threads"],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        campaign = subprocess.run(
            [str(LABRXIV), "campaign", "--task", "continual-digits", "--policy", "llm"]
            + ["--model", MODEL, "--labs", "1", "--papers", "1", "--attempts", "3"]
            + ["--mode", "isolated", "--timeout", "120", *options],
            env=env | {"LABRXIV_PRICES": str(prices)},
            capture_output=True,
            text=True,
            timeout=200,
        )
    finally:
        worker.terminate()
        try:
            worker.wait(timeout=20)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait(timeout=10)
    said = campaign.stdout + campaign.stderr + "\n--- worker\n" + log.read_text()[-3000:]
    assert campaign.returncode == 0, said
    return EventStore.from_url(pg_url), said


def payloads(store: EventStore, kind: str) -> list[Any]:
    return [r.typed().payload for r in store.iter_records(0, types=[kind])]


def test_workers_without_the_campaigns_prices_keep_its_dollars_budget(
    redis_url: str, pg_url: str, tmp_path: Path, server: FakeServer
) -> None:
    store, said = distributed_campaign(tmp_path, server, redis_url, pg_url, "--dollars", "5")
    try:
        (started,) = payloads(store, "run.started")
        (finished,) = payloads(store, "run.finished")
    finally:
        store.engine.dispose()
    assert finished.reason == "done", f"{finished}\n{said}"
    assert isinstance(started, RunStarted) and started.llm is not None
    price = started.llm.prices[MODEL]
    assert price.input_per_mtok == 1.0
    assert price.source == f"user:{tmp_path / 'prices.toml'}:{MODEL}"


def test_workers_without_the_campaigns_prices_keep_its_reviewers_budget(
    redis_url: str, pg_url: str, tmp_path: Path, server: FakeServer
) -> None:
    server.default = Reviewer()
    store, said = distributed_campaign(
        tmp_path, server, redis_url, pg_url,
        "--review", "llm", "--review-model", MODEL, "--reviewer-dollars", "5",
    )  # fmt: skip
    try:
        reviews = payloads(store, "review.submitted")
        failed = payloads(store, "review.failed")
    finally:
        store.engine.dispose()
    assert not failed, f"{failed}\n{said}"
    assert len(reviews) == 1, said
    assert reviews[0].price is not None and reviews[0].price.source.startswith("user:"), said
