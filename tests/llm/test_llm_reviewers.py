"""The `llm` reviewer against the local fake model server, through the real system: each
paper gets its ensemble's reviews (each call written ahead in the paper's review stream,
sent by the next step) and a decision; the paper reaches the model as quoted data; an
answer that is no valid form is a `review.failed` naming the field; the reviewers' calls
are in the ledger (kind `review`) and count against the reviewer budget, which, reached,
stops reviewing with the numbers and loses nothing."""

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_server import FakeServer, Received, Scripted, completion, usage
from sqlalchemy import select
from test_llm_curves import GRADER_MODEL, _lab_script, _technique
from test_llm_curves import PRICES as CURVES_PRICES

from events.payloads import (
    LlmConfig,
    ModelCalled,
    PaperDecided,
    PaperSubmitted,
    ReviewConfig,
    ReviewFailed,
    ReviewStopped,
    ReviewSubmitted,
)
from labrxiv.settings import load_settings
from labrxiv.wiring import Embedded, open_embedded
from projections.ledger import LEDGER
from projections.reviews import DECISIONS, REVIEWS
from workers.lab.campaign import CampaignPlan, start_campaign

KEY = "sk-review-test-key-0123456789abcdef"
PRICES = (
    CURVES_PRICES
    + """
[models.reviewer-sim]
input = 1.0
cached_input = 0.5
output = 4.0
"""
)
FORM = {
    "summary": "A search over configurations.",
    "strengths": ["graded numbers"],
    "weaknesses": ["one task only"],
    "questions": [],
    "soundness": 3,
    "presentation": 3,
    "contribution": 2,
    "rating": 6,
    "confidence": 3,
    "ethics_flag": False,
}
USAGE = usage(300, 80)


class Reviewer:
    """Answers each review request with the form (or, for the listed calls, with `bad`)."""

    def __init__(self, bad: dict[int, str] | None = None) -> None:
        self.bad = bad or {}
        self.calls = 0

    def __call__(self, received: Received) -> Scripted:
        self.calls += 1
        text = self.bad.get(self.calls, json.dumps(FORM))
        return completion(text=text, usage=USAGE)


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeServer]:
    with FakeServer(models=("reviewer-sim",)) as fake:
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        monkeypatch.setenv("OPENAI_BASE_URL", fake.url)
        monkeypatch.setenv("LABRXIV_LLM_TIMEOUT", "5")
        yield fake


def system_for(tmp_path: Path) -> Embedded:
    prices = tmp_path / "prices.toml"
    prices.write_text(PRICES)
    return open_embedded(load_settings(data_dir=tmp_path / "data", prices=prices), threads=3)


def campaign(system: Embedded, review: ReviewConfig, labs: int = 2, papers: int = 1) -> str:
    plan = CampaignPlan(
        task="continual-digits",
        labs=labs,
        papers=papers,
        mode="archive",
        seed=1,
        attempts=4,
        review=review,
    )
    started, _ = start_campaign(system.bus, plan)
    system.settle()
    return started


def review_streams(system: Embedded, campaign_id: str) -> dict[str, list]:
    papers = system.store.iter_records(types=["paper.submitted"], correlation=campaign_id)
    return {
        p.payload["paper_id"]: system.store.read_stream(f"review-{p.payload['paper_id']}")
        for p in papers
    }


def test_every_paper_gets_its_ensembles_reviews_and_a_decision(
    server: FakeServer, tmp_path: Path
) -> None:
    server.default = Reviewer()
    system = system_for(tmp_path)
    try:
        config = ReviewConfig(reviewer="llm", model="reviewer-sim", reviews=2, temperature=0.0)
        made = campaign(system, config)
        streams = review_streams(system, made)
        assert len(streams) == 2
        for events in streams.values():
            types = [e.type for e in events]
            assert types[0] == "review.requested" and types[-1] == "paper.decided", types
            reviews = [e for e in events if isinstance(e.payload, ReviewSubmitted)]
            assert [r.payload.reviewer for r in reviews] == ["llm-0", "llm-1"]
            assert all(r.payload.kind == "llm" and r.payload.model for r in reviews)
            assert all(r.payload.price is not None and r.payload.cost_usd for r in reviews)
            decided = events[-1].payload
            assert isinstance(decided, PaperDecided)
            assert decided.reviews == [r.id for r in reviews] and decided.mean_rating == 6
            # each call was recorded before it was sent: called, then its answer
            called = [e for e in events if isinstance(e.payload, ModelCalled)]
            assert len(called) == 2
            for call in called:
                after = events[call.version + 1]
                assert after.type == "model.responded"
                assert after.payload.call_id == call.payload.call_id
        requests = server.completions()
        assert len(requests) == 4
        for request in requests:
            assert request.body["response_format"] == {"type": "json_object"}
            user = request.body["messages"][-1]["content"]
            assert user.startswith("<paper>\n{") and "</paper>" in user
        system.runner.catch_up()
        with system.store.engine.connect() as conn:
            rows = conn.execute(select(LEDGER).where(LEDGER.c.kind == "review")).mappings().all()
            tables = {t.name: conn.execute(select(t)).all() for t in (REVIEWS, DECISIONS, LEDGER)}
        assert len(rows) == 4 and all(r["total_tokens"] == 380 for r in rows)
        assert all(r["cost_known"] and r["cost_usd"] > 0 for r in rows)
        system.runner.rebuild()
        with system.store.engine.connect() as conn:
            again = {t.name: conn.execute(select(t)).all() for t in (REVIEWS, DECISIONS, LEDGER)}
        assert {k: sorted(v) for k, v in again.items()} == {k: sorted(v) for k, v in tables.items()}
    finally:
        system.close()


def test_an_answer_that_is_no_form_is_a_failed_review_naming_the_field(
    server: FakeServer, tmp_path: Path
) -> None:
    bad = dict(FORM, rating=11)
    server.default = Reviewer(bad={1: json.dumps(bad), 2: "I liked it."})
    system = system_for(tmp_path)
    try:
        made = campaign(system, ReviewConfig(reviewer="llm", model="reviewer-sim"), labs=2)
        streams = list(review_streams(system, made).values())
        reasons = sorted(
            e.payload.reason for s in streams for e in s if isinstance(e.payload, ReviewFailed)
        )
        assert len(reasons) == 2
        assert any("rating" in r for r in reasons)
        assert any("not JSON" in r for r in reasons)
        for events in streams:  # one reviewer, no valid review: stopped, not decided
            assert isinstance(events[-1].payload, ReviewStopped)
            assert "no reviewer gave a valid review" in events[-1].payload.reason
        finished = system.store.read_records(types=["campaign.finished"], correlation=made)
        assert len(finished) == 1  # a stopped review does not hold its campaign open
    finally:
        system.close()


def test_the_reviewer_budget_stops_reviewing_with_a_reason_and_loses_nothing(
    server: FakeServer, tmp_path: Path
) -> None:
    server.default = Reviewer()
    system = system_for(tmp_path)
    try:
        config = ReviewConfig(reviewer="llm", model="reviewer-sim", tokens=1)
        made = campaign(system, config, labs=1, papers=3)
        streams = review_streams(system, made)
        assert len(streams) == 3
        stopped = [s[-1].payload for s in streams.values() if s[-1].type == "review.stopped"]
        assert stopped, "a paper reviewed after the budget was spent is stopped"
        assert all("reviewer token budget reached: 380 of 1" in s.reason for s in stopped)
        assert all(s[-1].type in ("paper.decided", "review.stopped") for s in streams.values())
        for events in streams.values():  # every call written ahead has its outcome
            called = {e.payload.call_id for e in events if isinstance(e.payload, ModelCalled)}
            answered = {e.payload.call_id for e in events if e.type == "model.responded"}
            assert called == answered
        finished = system.store.read_records(types=["campaign.finished"], correlation=made)
        assert len(finished) == 1
    finally:
        system.close()


class LabAndReviewer:
    """One endpoint for an `llm` lab (its script), its task's grader and its reviewer."""

    def __init__(self) -> None:
        self.script = _lab_script()

    def __call__(self, received: Received) -> Scripted:
        model = received.body.get("model")
        if model == GRADER_MODEL:
            return completion(text="Step 1: add. The answer is 12.", usage=usage(90, 25))
        if model == "reviewer-sim":
            return completion(text=json.dumps(FORM), usage=USAGE)
        return self.script.pop(0) if self.script else completion(text="done", usage=usage(5, 1))


def llm_lab_system(
    server: FakeServer,
    answers: "LabAndReviewer",
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Embedded:
    """The embedded system with the fake server answering an `llm` lab on math-prompting,
    its grader and its reviewer."""
    server.default = answers
    server.models.extend(["lab-priced", GRADER_MODEL])
    monkeypatch.setenv("LABRXIV_GRADER_MODEL", GRADER_MODEL)
    return system_for(tmp_path)


def llm_lab_plan(review: ReviewConfig, attempts: int) -> CampaignPlan:
    """One `llm` lab writing one paper on math-prompting, its papers reviewed."""
    return CampaignPlan(
        task="math-prompting",
        labs=1,
        papers=1,
        mode="isolated",
        seed=1,
        attempts=attempts,
        policy="llm",
        llm=LlmConfig(model="lab-priced", temperature=0.0),
        review=review,
    )


def test_an_llm_labs_paper_is_reviewed_by_an_llm_reviewer(
    server: FakeServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    system = llm_lab_system(server, LabAndReviewer(), tmp_path, monkeypatch)
    try:
        review = ReviewConfig(reviewer="llm", model="reviewer-sim", reviews=2)
        made, (run,) = start_campaign(system.bus, llm_lab_plan(review, attempts=4))
        system.settle()
        assert system.store.read_stream(run)[-1].type == "run.finished"
        (events,) = review_streams(system, made).values()
        assert [e.type for e in events if e.type in ("review.submitted", "paper.decided")] == [
            "review.submitted",
            "review.submitted",
            "paper.decided",
        ]
        finished = system.store.read_records(types=["campaign.finished"], correlation=made)
        assert len(finished) == 1
        system.runner.catch_up()
        with system.store.engine.connect() as conn:
            kinds = conn.execute(select(LEDGER.c.kind, LEDGER.c.run)).all()
        assert sum(k == "review" for k, _ in kinds) == 2
        assert all(r.startswith("review-") for k, r in kinds if k == "review")
        assert any(k == "model" and r == run for k, r in kinds)
    finally:
        system.close()


class LabThatRevises(LabAndReviewer):
    """The `llm` lab of `LabAndReviewer`, which then answers its reviews in the `revise`
    phase: one more attempt, and the new version of its paper."""

    def __init__(self) -> None:
        super().__init__()
        self.revising: list[Scripted] | None = None

    def __call__(self, received: Received) -> Scripted:
        told = " ".join(str(m.get("content")) for m in received.body.get("messages", []))
        if received.body.get("model") == "lab-priced" and "Phase: revise" in told:
            if self.revising is None:
                paper_id = re.search(r"revises='(p-[0-9a-f]+)'", told)
                assert paper_id is not None, "the revise phase names the paper"
                self.revising = _revision_script(paper_id.group(1))
            if self.revising:
                return self.revising.pop(0)
        return super().__call__(received)


def _revision_script(paper_id: str) -> list[Scripted]:
    u = usage(200, 40)
    config = _technique(3)
    paper = {
        "title": "Step by step, revised",
        "abstract": "Thinking in steps, with examples.",
        "body": "## Response to the reviews\n\nWe sampled three answers and measured again.",
        "claims": [],
        "revises": paper_id,
    }
    return [
        completion(
            tool_calls=[("write_file", json.dumps({"path": "config.json", "content": config}))],
            usage=u,
        ),
        completion(tool_calls=[("evaluate", "{}")], usage=u),
        completion(tool_calls=[("submit_paper", json.dumps(paper))], usage=u),
    ]


def test_an_llm_lab_revises_its_paper_in_the_revise_phase(
    server: FakeServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    system = llm_lab_system(server, LabThatRevises(), tmp_path, monkeypatch)
    try:
        made, (run,) = start_campaign(system.bus, llm_lab_plan(ReviewConfig(rounds=1), attempts=6))
        system.settle()
        events = system.store.read_stream(run)
        assert events[-1].type == "run.finished", events[-1].payload
        papers = [e.payload for e in events if isinstance(e.payload, PaperSubmitted)]
        assert len(papers) == 2 and papers[1].revises == papers[0].paper_id
        first_reviews = system.store.read_stream(f"review-{papers[0].paper_id}")
        assert papers[1].answers == first_reviews[-1].payload.reviews  # filled by the tool
        types = [e.type for e in events]
        awaited, received = types.index("review.awaited"), types.index("review.received")
        entered = [e for e in events if e.type == "phase.entered" and e.payload.phase == "revise"]
        assert len(entered) == 1 and awaited < received < entered[0].version
        assert "Weaknesses the reviewers named" in entered[0].payload.note
        assert sum(t == "experiment.scored" for t in types[entered[0].version :]) == 1
        # the revise phase's call carried the reviews to the model
        revise_calls = [
            r for r in server.completions() if "Phase: revise" in json.dumps(r.body["messages"])
        ]
        assert revise_calls and "Weaknesses the reviewers named" in json.dumps(
            revise_calls[0].body["messages"]
        )
        second = system.store.read_stream(f"review-{papers[1].paper_id}")
        assert second[-1].type == "paper.decided"
        finished = system.store.read_records(types=["campaign.finished"], correlation=made)
        assert len(finished) == 1
    finally:
        system.close()
