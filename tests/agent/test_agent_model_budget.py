"""An agent lab's model budget is kept at the recording endpoint: the call that would go
past it is refused there (HTTP 429, `insufficient_quota`) and never reaches the provider;
the run ends `budget`, overspent by at most the one call that crossed the limit."""

from pathlib import Path

import pytest

from events.payloads import ModelResponded
from tests.agent.agent_support import run_campaign, run_events, script_folder, store_of
from tests.llm.fake_server import FakeServer, completion, usage

AGENT = '''"""Calls the model until it is refused, and says how it was refused."""
import os
import signal
import sys

from openai import APIStatusError, OpenAI

# Stopped by the worker right after the refusal: say what the refusal was first.
signal.signal(signal.SIGTERM, signal.SIG_IGN)
client = OpenAI()
for number in range(1, 50):
    try:
        client.chat.completions.create(
            model=os.environ["OPENAI_MODEL"],
            messages=[{"role": "user", "content": f"call {number}"}],
        )
    except APIStatusError as exc:
        print(f"refused: {exc.status_code} {exc.code}: {exc.message}", flush=True)
        sys.exit(1)
    print(f"call {number}: answered", flush=True)
'''


def spent_of(budget: str, answer: ModelResponded) -> float:
    """What one answer used of a `budget` (tokens or dollars)."""
    if budget == "tokens":
        assert answer.usage is not None
        return answer.usage.input_tokens + answer.usage.output_tokens
    assert answer.cost_usd is not None
    return answer.cost_usd


@pytest.mark.parametrize(
    ("budget", "limit", "answer"),
    [
        ("tokens", "500", (200, 30)),  # 230 tokens an answer: the third passes 500
        ("dollars", "0.1", (200_000, 30_000)),  # $0.048 an answer at gpt-4o-mini's price
    ],
)
def test_a_model_budget_stops_the_agent_at_the_endpoint(
    tmp_path: Path, budget: str, limit: str, answer: tuple[int, int]
) -> None:
    folder = script_folder(tmp_path, "spender.py", AGENT)
    reply = completion(text="ok", usage=usage(*answer))
    with FakeServer(default=reply, models=("gpt-4o-mini",)) as server:
        said = run_campaign(
            tmp_path,
            server.url,
            "--labs", "1", "--papers", "1", "--mode", "isolated",
            "--agent", f"python {folder}/spender.py",
            "--agent-env", str(folder),
            "--model", "gpt-4o-mini",
            f"--{budget}", limit,
            "--timeout", "200",
        )  # fmt: skip
        requests = server.completions()
    assert said.returncode == 0, said.stdout[-3000:] + said.stderr[-3000:]
    ((run, events),) = run_events(tmp_path).items()
    types = [e.type for e in events]
    assert events[-1].type == "run.finished", types
    assert events[-1].payload.reason == "budget", events[-1].payload
    (over,) = [e.payload for e in events if e.type == "budget.exceeded"]
    assert over.budget == budget
    # A few calls reached the provider; every one of them is recorded, the refused one is not.
    responded = [e.payload for e in events if e.type == "model.responded"]
    assert len(requests) == len(responded) == types.count("model.called") == 3
    assert "model.failed" not in types
    used = sum(spent_of(budget, r) for r in responded)
    one = max(spent_of(budget, r) for r in responded)
    assert float(limit) <= used <= float(limit) + one
    assert over.used == pytest.approx(used) and over.limit == float(limit)
    # The agent was told why (429, insufficient_quota), and the session says it stopped it.
    (exited,) = [e.payload for e in events if e.type == "agent.exited"]
    assert exited.stopped == budget
    store = store_of(tmp_path)
    try:
        assert exited.stdout is not None
        stdout = (store.get_blob(exited.stdout.sha256) or b"").decode()
    finally:
        store.engine.dispose()
    lines = stdout.splitlines()
    assert lines[:3] == ["call 1: answered", "call 2: answered", "call 3: answered"], stdout
    assert lines[3].startswith("refused: 429 insufficient_quota: "), stdout
    assert budget in lines[3]
    assert len(lines) == 4
