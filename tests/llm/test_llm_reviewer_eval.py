"""`labrxiv reviewers eval --review-model`: the llm reviewer run on a data set's papers
against the local fake model server. Each paper's call is written ahead and recorded in
the evaluation's stream with the review (the ledger counts it); the figures are those of
the reviewer's answers; a reviewer budget stops it with the numbers, nothing lost."""

import json
import re
from pathlib import Path

import orjson
import pytest
from fake_server import FakeServer, Received, Scripted, completion, usage
from typer.testing import CliRunner

from analysis.reviewer_eval import HumanPaper, Prediction, evaluate
from events import EventStore
from labrxiv.cli import app

KEY = "sk-review-eval-key-0123456789abcdef"
PAPERS = [
    {"id": "A/1", "text": "Paper A: rating seven.", "reviews": [{"rating": 6}, {"rating": 8}],
     "decision": "accept"},
    {"id": "B/2", "text": "Paper B: rating four.", "reviews": [{"rating": 3}, {"rating": 5}],
     "decision": "reject"},
    {"id": "C/3", "text": "Paper C: rating eight.", "reviews": [{"rating": 9}],
     "decision": "accept"},
    {"id": "D/4", "text": "Paper D: rating three.", "reviews": [{"rating": 2}, {"rating": 4}],
     "decision": "reject"},
]  # fmt: skip
WORDS = {"three": 3, "four": 4, "seven": 7, "eight": 8}


def answer(received: Received) -> Scripted:
    """The form, rated as the paper's text says (the fake reviewer reads the quoted paper)."""
    said = re.search(r"rating (\w+)", json.dumps(received.body["messages"][-1]["content"]))
    assert said is not None
    form = {
        "summary": "s",
        "strengths": [],
        "weaknesses": [],
        "questions": [],
        "soundness": 3,
        "presentation": 3,
        "contribution": 3,
        "rating": WORDS[said.group(1)],
        "confidence": 4,
        "ethics_flag": False,
    }
    return completion(text=json.dumps(form), usage=usage(200, 50))


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "papers.jsonl").write_text("\n".join(orjson.dumps(p).decode() for p in PAPERS))
    monkeypatch.setenv("LABRXIV_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("LABRXIV_LLM_TIMEOUT", "5")
    return tmp_path


def test_the_reviewer_reviews_each_paper_and_is_scored(
    env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakeServer(default=answer, models=("judge",)) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        args = ["reviewers", "eval", "--data", str(env / "papers.jsonl")]
        result = CliRunner().invoke(app, [*args, "--review-model", "judge", "--json"])
        assert result.exit_code == 0, result.output
        assert len(server.completions()) == 4
    shown = orjson.loads(result.stdout)
    said = [Prediction(id=p["id"], rating=WORDS[p["text"].split()[-1][:-1]]) for p in PAPERS]
    expected = evaluate([HumanPaper.model_validate(p) for p in PAPERS], said, resamples=1000)
    assert shown["humans"]["mae"]["value"] == pytest.approx(expected.mae.value)
    assert shown["humans"]["pairwise_accuracy"]["value"] == pytest.approx(1.0)
    store = EventStore.from_url(f"sqlite:///{env / 'data' / 'labrxiv.db'}")
    events = store.read_stream(shown["reviewed_in"])
    assert [e.type for e in events] == ["model.called", "model.responded", "review.submitted"] * 4
    assert [e.payload.paper_id for e in events if e.type == "review.submitted"] == [
        "A_1",
        "B_2",
        "C_3",
        "D_4",
    ]


def test_a_reviewer_budget_stops_the_run_with_the_numbers(
    env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakeServer(default=answer, models=("judge",)) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        args = ["reviewers", "eval", "--data", str(env / "papers.jsonl"), "--review-model"]
        result = CliRunner().invoke(app, [*args, "judge", "--reviewer-tokens", "400", "--json"])
        assert result.exit_code == 0, result.output
        assert len(server.completions()) == 2  # 250 tokens each: the third would pass 400
    assert "reviewing stopped: reviewer token budget reached: 500 of 400" in result.stderr
    shown = orjson.loads(result.stdout)
    assert shown["humans"]["papers"] == 2
    store = EventStore.from_url(f"sqlite:///{env / 'data' / 'labrxiv.db'}")
    events = store.read_stream(shown["reviewed_in"])
    assert events[-1].type == "review.stopped" and events[-1].payload.paper_id == "C_3"


def test_a_reviewer_that_gives_no_valid_review_says_where_to_look(
    env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakeServer(default=completion(text="I liked it.", usage=usage(10, 2))) as server:
        server.models.append("judge")
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        args = ["reviewers", "eval", "--data", str(env / "papers.jsonl")]
        result = CliRunner().invoke(app, [*args, "--review-model", "judge"])
    assert result.exit_code == 1
    assert "the reviewer gave no valid review of any paper" in result.stderr
    assert "labrxiv events tail --stream revieweval-" in result.stderr
    assert "None" not in result.stderr
