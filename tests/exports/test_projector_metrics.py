"""`labrxiv projector --otel-endpoint URL --metrics-port N` serves its live sink's
metrics, read with prometheus-client's own parser: while the endpoint refuses, the lag
is the whole log and nothing is sent; once it takes them, every span is counted sent,
none skipped, and the lag is 0. `--metrics-port` with `--once` is refused in one line."""

import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from events import EventStore
from projections.exports.otel_runs import run_traces
from tests.exports.otel_campaign import Campaign, copy_log, llm_campaign
from tests.exports.otlp_receiver import OtlpReceiver
from tests.ports import free_port

LABRXIV = Path(sys.executable).parent / "labrxiv"
WAIT_S = 120
"""The longest wait for the projector (a guard against a hang, not a measure)."""


@pytest.fixture(scope="module")
def done(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Campaign]:
    with llm_campaign(tmp_path_factory.mktemp("projector-metrics")) as campaign:
        yield campaign


def scrape(port: int) -> dict[str, float]:
    """The samples the port serves, by name; {} while it does not answer."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as answer:
            text = answer.read().decode()
    except (urllib.error.URLError, ConnectionError):
        return {}
    return {s.name: s.value for f in text_string_to_metric_families(text) for s in f.samples}


def wait_for(what: str, ready: Callable[[], bool], projector: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + WAIT_S
    while not ready():
        assert projector.poll() is None, f"the projector ended waiting for {what}"
        assert time.monotonic() < deadline, f"still waiting for {what} after {WAIT_S} s"
        time.sleep(0.2)


@pytest.mark.slow
def test_the_projector_serves_its_sinks_counters_and_lag(done: Campaign, tmp_path: Path) -> None:
    source = done.system.store
    store = EventStore.from_url(f"sqlite:///{tmp_path / 'labrxiv.db'}")
    copy_log(source, store, 0, source.max_position())
    spans = [s for t in run_traces(store, done.runs) for s in t.spans]
    port = free_port()
    env = os.environ | {"LABRXIV_DATA_DIR": str(tmp_path)}
    with OtlpReceiver() as receiver:
        receiver.refuse, receiver.refuse_status = 10**6, 503  # down: the sink waits
        args = ["projector", "--poll", "0.1", "--otel-endpoint", receiver.url]
        args += ["--metrics-port", str(port), "--metrics-addr", "127.0.0.1"]
        projector = subprocess.Popen(
            [str(LABRXIV), *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        try:
            wait_for("a refused page", lambda: receiver.requests > 0, projector)
            held = scrape(port)
            assert held["labrxiv_otel_sink_lag_events"] == store.max_position()
            assert held["labrxiv_otel_spans_sent_total"] == 0
            assert held["labrxiv_otel_spans_skipped_total"] == 0
            receiver.refuse = 0
            wait_for(
                "the sink to catch up",
                lambda: scrape(port).get("labrxiv_otel_sink_lag_events") == 0,
                projector,
            )
            caught_up = scrape(port)
        finally:
            projector.terminate()
            projector.wait()
    assert caught_up["labrxiv_otel_spans_sent_total"] == len(spans) == len(receiver.spans)
    assert caught_up["labrxiv_otel_spans_skipped_total"] == 0


def test_metrics_port_with_once_is_refused_in_one_line(tmp_path: Path) -> None:
    env = os.environ | {"LABRXIV_DATA_DIR": str(tmp_path)}
    args = ["projector", "--once", "--metrics-port", str(free_port())]
    done = subprocess.run(
        [str(LABRXIV), *args], capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert "--metrics-port" in line and "--once" in line


def test_metrics_port_0_says_the_port_the_system_chose(tmp_path: Path) -> None:
    env = os.environ | {"LABRXIV_DATA_DIR": str(tmp_path)}
    args = ["projector", "--poll", "0.1", "--metrics-port", "0", "--metrics-addr", "127.0.0.1"]
    projector = subprocess.Popen(
        [str(LABRXIV), *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env | {"COLUMNS": "200"},
    )
    try:
        assert projector.stdout is not None
        said = projector.stdout.readline().decode()
        assert said.startswith("projector metrics on http://127.0.0.1:"), said
        port = int(said.rsplit(":", 1)[1].split("/", 1)[0])
        assert port != 0, said
        assert "labrxiv_otel_spans_sent_total" in scrape(port)
    finally:
        projector.terminate()
        projector.wait()
