"""A campaign's traces in Arize Phoenix (its own virtualenv, `phoenix serve` started by the
test), read back through its REST API: one trace a run, model spans with the ledger's
tokens, tool spans, each model call's parent its run's span and each tool call's the
model call that asked for it. The spans reach Phoenix through
`labrxiv projector --otel-endpoint`, killed and started again while the log grows (a
receiver in front of Phoenix counts what the sink sent: each span once), then through
`labrxiv export otel` (the same ids: Phoenix keeps one of each)."""

import os
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from events import EventStore
from labrxiv.cli import app
from projections.exports.otel_runs import run_traces
from projections.exports.otel_send import SpanSender
from projections.exports.otel_sink import OtelSink
from projections.ledger import ledger_calls
from tests.exports.otel_campaign import Campaign, copy_log, cut_inside_a_call, llm_campaign
from tests.exports.otlp_receiver import OtlpReceiver
from tests.exports.phoenix_env import Phoenix, running_phoenix

WAIT_S = 180
"""The longest wait for spans to arrive (a guard against a hang, not a measure)."""
LABRXIV = Path(sys.executable).parent / "labrxiv"


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Phoenix]:
    with running_phoenix(tmp_path_factory.mktemp("phoenix")) as running:
        yield running


@pytest.fixture(scope="module")
def done(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Campaign]:
    with llm_campaign(tmp_path_factory.mktemp("otel-phoenix")) as campaign:
        yield campaign


def wait_for(what: str, ready: Callable[[], bool]) -> None:
    deadline = time.monotonic() + WAIT_S
    while not ready():
        assert time.monotonic() < deadline, f"still waiting for {what} after {WAIT_S} s"
        time.sleep(0.2)


def follow(data_dir: Path, endpoint: str, log: Path) -> subprocess.Popen[bytes]:
    """`labrxiv projector --otel-endpoint` following the log in `data_dir`."""
    env = os.environ | {"LABRXIV_DATA_DIR": str(data_dir)}
    with open(log, "ab") as out:
        return subprocess.Popen(
            [str(LABRXIV), "projector", "--poll", "0.1", "--otel-endpoint", endpoint],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
        )


@pytest.mark.slow
def test_phoenix_shows_the_campaign_as_the_ledger_has_it(
    phoenix: Phoenix, done: Campaign, tmp_path: Path
) -> None:
    source = done.system.store
    data_dir = tmp_path / "grown"
    data_dir.mkdir()
    store = EventStore.from_url(f"sqlite:///{data_dir / 'labrxiv.db'}")
    cut = cut_inside_a_call(source)
    copy_log(source, store, 0, cut)
    log = tmp_path / "projector.log"
    with OtlpReceiver(forward_to=f"{phoenix.url}/v1/traces") as front:
        checkpoint = OtelSink(store, SpanSender(front.url))

        def caught_up() -> bool:
            return checkpoint.position() == store.max_position()

        projector = follow(data_dir, front.url, log)
        try:
            wait_for("the sink to reach the cut", caught_up)
        finally:
            projector.kill()  # no goodbye: a restart after a crash
            projector.wait()
        at_cut = [s for t in run_traces(store, done.runs) for s in t.spans]
        assert 0 < len(front.spans) == len(at_cut), log.read_text()[-2000:]
        copy_log(source, store, cut, source.max_position())
        projector = follow(data_dir, front.url, log)
        try:
            wait_for("the sink to reach the end", caught_up)
        finally:
            projector.terminate()
            projector.wait()
        sent = Counter(r.span_id for r in front.spans)
    built = {f"{s.span_id:016x}": s for t in run_traces(store, done.runs) for s in t.spans}
    assert set(sent.values()) == {1}, "the sink sent no span twice across its restart"
    assert sent.keys() == built.keys(), "and lost none"

    said = CliRunner().invoke(
        app,
        ["export", "otel", "--campaign", done.campaign, "--endpoint", phoenix.url],
        env={"LABRXIV_DATA_DIR": str(data_dir)},
    )
    assert said.exit_code == 0, said.output

    def spans() -> list[dict[str, Any]]:
        return phoenix.spans("labrxiv")

    wait_for("Phoenix to hold every span", lambda: len(spans()) >= len(built))
    held = spans()
    assert len(held) == len(built), "sent three times in all, each span is held once"
    by_trace: dict[str, list[dict[str, Any]]] = {}
    for span in held:
        by_trace.setdefault(span["context"]["trace_id"], []).append(span)
    assert len(by_trace) == len(done.runs), "one trace a run"
    with store.engine.connect() as conn:
        ledger = {(c["run"], c["call_id"]): c for c in ledger_calls(conn, campaign=done.campaign)}
    for trace in by_trace.values():
        (root,) = [s for s in trace if s["parent_id"] is None]
        run = root["attributes"]["gen_ai.conversation.id"]
        assert root["name"] == f"invoke_agent {root['attributes']['gen_ai.agent.name']}"
        assert root["events"] and all(
            e["name"] == "gen_ai.evaluation.result" for e in root["events"]
        )
        calls = [s for s in trace if s is not root]
        chats = {s["context"]["span_id"]: s for s in calls if s["name"].startswith("chat ")}
        assert all(s["parent_id"] == root["context"]["span_id"] for s in chats.values())
        for tool in (s for s in calls if s["context"]["span_id"] not in chats):
            asker = tool["attributes"]["gen_ai.tool.call.id"].rsplit("@", 1)[1].split("#")[0]
            chat = chats[tool["parent_id"]]  # an `llm` lab's calls are all asked for
            assert chat["attributes"]["labrxiv.call_id"].endswith(f":{asker}")
        _check_calls(run, calls, ledger)


def _check_calls(
    run: str, calls: list[dict[str, Any]], ledger: dict[tuple[str, str], dict[str, Any]]
) -> None:
    """The run's model and tool spans as Phoenix holds them, against the ledger's rows."""
    chats = [s for s in calls if s["name"].startswith("chat ")]
    tools = [s for s in calls if s["name"].startswith("execute_tool ")]
    assert len(chats) + len(tools) == len(calls) and chats and tools
    rows = {k[1]: row for k, row in ledger.items() if k[0] == run}
    assert {s["attributes"]["labrxiv.call_id"] for s in chats} == {
        c for c, row in rows.items() if row["kind"] == "model"
    }
    assert {s["attributes"]["gen_ai.tool.call.id"] for s in tools} == {
        c for c, row in rows.items() if row["kind"] == "tool"
    }
    for span in chats:
        row, attributes = rows[span["attributes"]["labrxiv.call_id"]], span["attributes"]
        assert (span["status_code"] == "ERROR") == (row["status"] == "failed")
        if row["status"] == "failed":
            continue
        assert attributes["gen_ai.usage.input_tokens"] == row["input_tokens"]
        assert attributes["gen_ai.usage.output_tokens"] == row["output_tokens"]
        assert attributes["gen_ai.usage.cache_read.input_tokens"] == row["cached_input_tokens"]
        assert attributes["gen_ai.usage.reasoning.output_tokens"] == row["reasoning_tokens"]
        assert attributes["gen_ai.response.model"] == row["model"]
    for span in tools:
        row = rows[span["attributes"]["gen_ai.tool.call.id"]]
        assert span["attributes"]["gen_ai.tool.name"] == row["tool"]
        assert (span["status_code"] == "ERROR") == (row["exit_code"] != 0)
