"""Two agent labs of one archive campaign: the second finds the first's paper through
`archive_search` and cites it, each conversation told apart by its tool calls' ids."""

import json
import re
import threading
from pathlib import Path

from tests.agent.agent_support import (
    SCORE,
    USAGE,
    agent_folder,
    conversation_of,
    numbered,
    researcher,
    run_campaign,
    run_events,
    tool_results,
)
from tests.llm.fake_server import FakeServer, Received, Scripted, completion, usage

NO_PAPERS = "no papers yet"
SEARCHES = 60
"""Searches the second conversation makes at most while the archive shows no paper."""
PAPER_ID = re.compile(r"\bp-[0-9a-f]{12}\b")


class TwoConversations:
    """A model holding two conversations: the first one to start evaluates, submits and
    finishes; the second searches the archive until it shows a paper, then evaluates
    and submits a paper citing what it found, and finishes."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.started = 0
        self.searches = 0
        self._first = researcher(attempts=1)

    def __call__(self, received: Received) -> Scripted:
        conversation = conversation_of(received.body)
        if conversation is None:
            with self._lock:
                self.started += 1
                conversation = self.started
        told = tool_results(received.body)
        step = len(told) + 1
        if conversation == 1:
            return numbered(self._first(received), 1, step)
        return numbered(self._second(told), conversation, step)

    def _second(self, told: list[str]) -> Scripted:
        spent = usage(*USAGE)
        if not told or (told[-1].strip() == NO_PAPERS and self.searches < SEARCHES):
            self.searches += 1
            query = json.dumps({"query": "accuracy on continual digits"})
            return completion(
                tool_calls=[("archive_search", query)],
                usage=spent,
                delay_s=0.5 if told else 0.0,
            )
        found = sorted({p for text in told for p in PAPER_ID.findall(text)})
        scores = [m for text in told for m in SCORE.findall(text)]
        if not scores:
            return completion(tool_calls=[("evaluate", "{}")], usage=spent)
        if not any(t.startswith("submitted") for t in told):
            attempt, value = scores[-1]
            paper = {
                "title": "Starter accuracy, after the archive",
                "abstract": "We measure the starter solution, as the archive's paper did.",
                "body": f"# Results\n\nAttempt {attempt} scored {value}; see {', '.join(found)}.",
                "claims": [
                    {
                        "subtask": "final_accuracy",
                        "metric": "accuracy",
                        "value": float(value),
                        "attempt": int(attempt),
                    }
                ],
                "cited": found,
            }
            return completion(tool_calls=[("submit_paper", json.dumps(paper))], usage=spent)
        return completion(
            tool_calls=[("finish", json.dumps({"summary": "built on the archive"}))], usage=spent
        )


def test_the_second_agent_lab_finds_and_cites_the_first_labs_paper(tmp_path: Path) -> None:
    folder = agent_folder(tmp_path, "openai_mcp_agent.py")
    model = TwoConversations()
    with FakeServer(default=model, models=("gpt-4o-mini",)) as server:
        said = run_campaign(
            tmp_path,
            server.url,
            "--labs", "2", "--papers", "1", "--mode", "archive",
            "--agent", f"python {folder}/openai_mcp_agent.py",
            "--agent-env", str(folder),
            "--model", "gpt-4o-mini",
            "--timeout", "250",
        )  # fmt: skip
        requests = server.completions()
    assert said.returncode == 0, said.stdout[-3000:] + said.stderr[-3000:]
    assert model.started == 2
    # Every request after the first of a conversation answers that conversation's calls only.
    for request in requests:
        ids = {
            m["tool_call_id"].split("_")[0]
            for m in request.body["messages"]
            if m.get("role") == "tool"
        }
        assert len(ids) <= 1, ids
    runs = run_events(tmp_path)
    assert len(runs) == 2
    papers = {
        run: [e.payload for e in events if e.type == "paper.submitted"]
        for run, events in runs.items()
    }
    assert all(len(p) == 1 for p in papers.values()), papers
    for events in runs.values():
        assert events[-1].type == "run.finished" and events[-1].payload.reason == "done"
    # One run retrieved the other's paper, and cites it.
    found = [
        (run, other)
        for run, events in runs.items()
        for other in runs
        if other != run
        and any(
            e.type == "papers.retrieved" and papers[other][0].paper_id in e.payload.paper_ids
            for e in events
        )
    ]
    assert len(found) == 1, found
    ((reader, author),) = found
    assert papers[reader][0].cited == [papers[author][0].paper_id]
    # The author never searched; the reader searched until the paper showed.
    assert not any(e.type == "papers.retrieved" for e in runs[author])
    searched = [e.payload for e in runs[reader] if e.type == "papers.retrieved"]
    assert 1 <= len(searched) <= SEARCHES
    assert searched[-1].paper_ids == [papers[author][0].paper_id]
    assert all(s.paper_ids == [] for s in searched[:-1])
