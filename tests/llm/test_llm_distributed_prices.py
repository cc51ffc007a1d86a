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

import pytest
from fake_server import FakeServer
from test_llm_lab import KEY, _cycle

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


def test_workers_without_the_campaigns_prices_keep_its_dollars_budget(
    redis_url: str, pg_url: str, tmp_path: Path, server: FakeServer
) -> None:
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
            [str(LABRXIV), "worker", "-Q", "events,steps", "-c", "2", "-P", "threads"],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        campaign = subprocess.run(
            [str(LABRXIV), "campaign", "--task", "continual-digits", "--policy", "llm"]
            + ["--model", MODEL, "--labs", "1", "--papers", "1", "--attempts", "3"]
            + ["--mode", "isolated", "--dollars", "5", "--timeout", "120"],
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

    store = EventStore.from_url(pg_url)
    try:
        runs = [r for r in store.iter_records(0, types=["run.started", "run.finished"])]
        started = [store.read_stream(r.stream)[0].payload for r in runs if r.type == "run.started"]
        finished = [
            store.read_stream(r.stream)[-1].payload for r in runs if r.type == "run.finished"
        ]
    finally:
        store.engine.dispose()
    assert len(started) == 1 and isinstance(started[0], RunStarted), said
    assert len(finished) == 1, said
    assert finished[0].reason == "done", f"{finished[0]}\n{said}"
    assert campaign.returncode == 0, said
    config = started[0].llm
    assert config is not None and config.prices[MODEL].input_per_mtok == 1.0, said
    assert config.prices[MODEL].source == f"user:{prices}:{MODEL}"
