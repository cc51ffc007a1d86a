"""`labrxiv exporter`: two exporter processes at once, and one before and after
`labrxiv rebuild`, serve the same research samples; every metric is named by Prometheus'
conventions and listed, with its labels, in docs/metrics.md."""

import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
import redis
from prometheus_client import REGISTRY, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from events import EventStore
from projections.catalogue import all_projectors
from projections.exports.otel_metrics import SinkLag, spans_sent, spans_skipped
from projections.exports.otel_send import SpanSender
from projections.exports.otel_sink import OtelSink
from projections.runner import ProjectionRunner
from tests.ports import free_port
from tests.simulated import simulated_run
from workers import metrics
from workers.handlers import HANDLERS
from workers.queue_metrics import QUEUES, QueueCollector

LABRXIV = Path(sys.executable).with_name("labrxiv")
DOCS = Path(__file__).resolve().parents[2] / "docs" / "metrics.md"
SYSTEM = ("labrxiv_projection_lag", "labrxiv_log_head", "labrxiv_queue")
"""Metrics of the moment (ages, Redis), not read models: left out of the comparisons."""

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def scrape(port: int, deadline: float) -> str:
    """The exposition at `port`, waiting for the server to answer until `deadline`."""
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as r:
                return r.read().decode()
        except (urllib.error.URLError, ConnectionError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def research(text: str) -> Samples:
    """The research samples of an exposition."""
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        if family.name.startswith("labrxiv_") and not family.name.startswith(SYSTEM)
        for s in family.samples
    }


@pytest.fixture
def env(tmp_path: Path, pg_url: str, redis_url: str) -> Iterator[dict[str, str]]:
    """A PostgreSQL log of six simulated runs (one running), projected."""
    store = EventStore.from_url(pg_url)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    for index in range(6):
        run = list(simulated_run(f"e{index}", start, attempts=3, seed=index, campaign="c"))
        store.append(run if index else run[:-1])
    ProjectionRunner(store, all_projectors()).catch_up()
    store.engine.dispose()
    values = {k: v for k, v in os.environ.items() if not k.startswith("LABRXIV_")}
    values |= {
        "LABRXIV_DATABASE_URL": pg_url,
        "LABRXIV_REDIS_URL": redis_url,
        "LABRXIV_DATA_DIR": str(tmp_path / "data"),
    }
    yield values


@pytest.fixture
def two_exporters(env: dict[str, str]) -> Iterator[list[int]]:
    ports = [free_port(), free_port()]
    started = [
        subprocess.Popen(
            [str(LABRXIV), "exporter", "--port", str(port), "--addr", "127.0.0.1", "--runs", "3"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        for port in ports
    ]
    try:
        yield ports
    finally:
        for process in started:
            process.terminate()
            process.wait(timeout=30)


def test_two_exporters_and_a_rebuild_give_the_same_research_metrics(
    env: dict[str, str], two_exporters: list[int]
) -> None:
    deadline = time.monotonic() + 120
    first, second = (research(scrape(port, deadline)) for port in two_exporters)
    assert first == second
    assert ("labrxiv_runs", (("finish_reason", "done"), ("status", "finished"))) in first
    assert any(name == "labrxiv_actions_total" for name, _ in first)
    assert first[("labrxiv_exporter_other_runs", ())] == 3  # six runs, three shown

    rebuilt = subprocess.run(
        [str(LABRXIV), "rebuild"], env=env, capture_output=True, text=True, timeout=300
    )
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert research(scrape(two_exporters[1], deadline)) == first


def test_exporter_once_prints_queue_depth_and_lag(env: dict[str, str]) -> None:
    redis.Redis.from_url(env["LABRXIV_REDIS_URL"]).lpush("reviews", "a", "b", "c")
    out = subprocess.run(
        [str(LABRXIV), "exporter", "--once"], env=env, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr
    found = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(out.stdout)
        for s in family.samples
    }
    assert found[("labrxiv_queue_messages", (("queue", "steps"),))] == 0
    # Every queue a worker consumes is counted (`reviews` was not: found from outside).
    assert {queue for _, queue in HANDLERS.values()} == set(QUEUES)
    assert found[("labrxiv_queue_messages", (("queue", "reviews"),))] == 3
    assert found[("labrxiv_projection_lag_events", (("projector", "runs"),))] == 0


def test_queue_depth_is_left_out_while_redis_is_away() -> None:
    """A Redis down made the exporter's whole scrape an HTTP 500 (the read models'
    metrics with it): the queue gauges are left out instead."""
    collector = QueueCollector(f"redis://127.0.0.1:{free_port()}/0")  # nothing listens
    assert list(collector.collect()) == []


# -- names -------------------------------------------------------------------------------


def documented() -> dict[str, set[str]]:
    """docs/metrics.md's table rows: metric name (as exposed) → its labels."""
    rows = {}
    for line in DOCS.read_text().splitlines():
        match = re.match(r"\| `(labrxiv_[a-z_]+)` \| (\w+) \| ([^|]*)\|", line)
        if match:
            labels = set(re.findall(r"`([a-z_]+)`", match.group(3)))
            rows[match.group(1)] = labels
    return rows


def sink_lag_exposition(tmp_path: Path) -> str:
    """The projector's OpenTelemetry sink's lag, as its metrics port serves it."""
    from prometheus_client import CollectorRegistry

    store = EventStore.from_url(f"sqlite:///{tmp_path / 'sink.db'}")
    sender = SpanSender("http://127.0.0.1:9/v1/traces")  # nothing is sent
    registry = CollectorRegistry()
    registry.register(SinkLag(OtelSink(store, sender)))
    try:
        return generate_latest(registry).decode()
    finally:
        sender.close()


def worker_exposition() -> str:
    """Every system metric of a worker and of the projector's OpenTelemetry sink, each
    label set used once (in this process)."""
    metrics.count_recorded([], 1)
    event = next(simulated_run("n", datetime(2026, 1, 1, tzinfo=UTC)))
    metrics.count_recorded([event], 0)
    metrics.count_dead_letter("invalid event: payload: bad")
    metrics.count_undeliverable()
    metrics.observe_batch(3)
    with metrics.timed_append():
        pass
    metrics.observe_step("search", "acted", time.perf_counter())
    metrics.observe_task("labrxiv.record", "done", time.perf_counter())
    metrics.count_retry("labrxiv.record", "later")
    metrics.count_redelivery("labrxiv.record")
    metrics.count_reaped(1)
    spans_skipped().inc(0)
    spans_sent().inc(0)
    return generate_latest(REGISTRY).decode()


def test_metric_names_follow_the_conventions_and_are_documented(
    env: dict[str, str], tmp_path: Path
) -> None:
    out = subprocess.run(
        [str(LABRXIV), "exporter", "--once"], env=env, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr
    docs = documented()
    seen = set()
    for text in (out.stdout, worker_exposition(), sink_lag_exposition(tmp_path)):
        for family in text_string_to_metric_families(text):
            if not family.name.startswith("labrxiv_") or family.name.endswith("_created"):
                # process_*, python_* and a counter's creation time (the text parser
                # makes that a gauge of its own): prometheus-client's, not ours
                continue
            exposed = family.name + ("_total" if family.type == "counter" else "")
            seen.add(exposed)
            assert exposed in docs, f"{exposed} is not in docs/metrics.md"
            assert not re.search(r"_(ms|milliseconds|minutes|hours|kb|mb|percent)$", exposed)
            if family.type == "histogram":
                assert exposed.endswith(("_seconds", "_events")), exposed
            for sample in family.samples:
                if family.type == "counter" and not sample.name.endswith("_created"):
                    assert sample.name.endswith("_total"), sample.name
                labels = set(sample.labels) - {"le"}
                assert labels <= docs[exposed], (exposed, labels - docs[exposed])
    assert len(seen) >= 25, sorted(seen)
    missing = set(docs) - seen - {"labrxiv_findings", "labrxiv_run_verdicts"}
    assert not missing, f"documented but never exposed: {sorted(missing)}"
