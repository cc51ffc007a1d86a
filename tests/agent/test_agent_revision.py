"""An agent lab in a reviewed campaign: its paper is reviewed, and the agent is started
again with the reviews in TASK.md to revise it."""

import json
import re
from pathlib import Path

from tests.agent.agent_support import (
    SCORE,
    USAGE,
    agent_folder,
    run_campaign,
    store_of,
    tool_results,
)
from tests.llm.fake_server import FakeServer, Received, Scripted, completion, usage

REVIEWED = re.compile(r"Paper (p-[0-9a-f]+) \(")


def _reviser(received: Received) -> Scripted:
    """Evaluate, submit; in a revision (the reviews in TASK.md), evaluate and submit the
    new version, then finish. The first session ends without `finish`: the reviews come."""
    task = received.body["messages"][0]["content"]
    told = tool_results(received.body)
    scores = [m for text in told for m in SCORE.findall(text)]
    spent = usage(*USAGE)
    revising = REVIEWED.search(task) if "## Reviews of your paper" in task else None
    if not scores:
        return completion(tool_calls=[("evaluate", "{}")], usage=spent)
    if not any(t.startswith("submitted") for t in told):
        attempt, value = scores[-1]
        claim = {"subtask": "final_accuracy", "metric": "accuracy", "value": float(value)}
        paper = {
            "title": "Starter accuracy" + (" (revised)" if revising else ""),
            "abstract": "We measure the starter solution.",
            "body": f"# Results\n\nAttempt {attempt} scored {value}.",
            "claims": [claim | {"attempt": int(attempt)}],
        }
        if revising:
            paper["revises"] = revising.group(1)
        return completion(tool_calls=[("submit_paper", json.dumps(paper))], usage=spent)
    if revising:
        return completion(tool_calls=[("finish", '{"summary": "revised"}')], usage=spent)
    return completion(text="Submitted; waiting for the reviews.", usage=spent)


def test_an_agent_lab_revises_its_paper_after_the_reviews(tmp_path: Path) -> None:
    folder = agent_folder(tmp_path, "openai_mcp_agent.py")
    with FakeServer(default=_reviser, models=("gpt-4o-mini",)) as server:
        said = run_campaign(
            tmp_path,
            server.url,
            "--labs", "1", "--papers", "1", "--mode", "isolated",
            "--review", "grounded", "--review-rounds", "1",
            "--agent", f"python {folder}/openai_mcp_agent.py", "--agent-env", str(folder),
            "--model", "gpt-4o-mini", "--timeout", "240",
        )  # fmt: skip
    assert said.returncode == 0, said.stdout[-3000:] + said.stderr[-3000:]
    store = store_of(tmp_path)
    (run,) = {r.stream for r in store.iter_records(types=["run.started"])}
    events = store.read_stream(run)
    store.engine.dispose()
    starts = [e.payload for e in events if e.type == "agent.started"]
    assert [s.session for s in starts] == [1, 2]
    assert not starts[1].restored and "revising paper" in starts[1].detail
    first, second = [e.payload for e in events if e.type == "paper.submitted"]
    assert second.revises == first.paper_id
    types = [e.type for e in events]
    assert types.index("review.received") < types.index(
        "agent.started", types.index("agent.exited")
    )
    assert events[-1].type == "run.finished" and events[-1].payload.reason == "done"
