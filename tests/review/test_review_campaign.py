"""A campaign with review on, through the real system (embedded, on SQLite):
every paper gets its reviews and a decision in the log before the campaign ends; a review
task delivered again writes nothing; the reviews read model rebuilt equals incremental;
the grounded reviewer's rating follows the papers' measured scores, and a lab that
inflates its claims is rated unsound and rejected."""

import shutil
from pathlib import Path
from typing import Any

from scipy import stats
from sqlalchemy import select

from events import Event, EventStore
from events.payloads import PaperDecided, PaperSubmitted, ReviewConfig, ReviewSubmitted
from events.streams import review_stream
from labrxiv.settings import load_settings
from labrxiv.wiring import Embedded, open_embedded
from projections.reviews import DECISIONS, REVIEWS
from workers.lab.campaign import CampaignPlan, start_campaign
from workers.review.evidence import gather, measured_score
from workers.review.task import REVIEW_TASK

EXTRA = Path(__file__).resolve().parents[1] / "workers" / "policies_extra"
GYM = Path(__file__).resolve().parents[2] / "gym"


def plan(
    policy: str = "search",
    seed: int = 0,
    labs: int = 4,
    papers: int = 3,
    task: str = "continual-digits",
) -> CampaignPlan:
    return CampaignPlan(
        task=task,
        labs=labs,
        papers=papers,
        mode="archive",
        seed=seed,
        attempts=9,
        policy=policy,
        review=ReviewConfig(reviews=2),
    )


def run_campaign(system: Embedded, campaign_plan: CampaignPlan) -> str:
    campaign, _runs = start_campaign(system.bus, campaign_plan)
    system.settle()
    return campaign


def of_campaign(store: EventStore, campaign: str, *types: str) -> list[Event]:
    return [r.typed() for r in store.iter_records(types=list(types), correlation=campaign)]


def rows(store: EventStore) -> dict[str, list[dict[str, Any]]]:
    with store.engine.connect() as conn:
        return {
            t.name: [dict(r) for r in conn.execute(select(t).order_by(*t.primary_key)).mappings()]
            for t in (REVIEWS, DECISIONS)
        }


def paper_scores(store: EventStore, papers: list[Event]) -> dict[str, float | None]:
    """Each paper's measured score: what the grader gave the attempts its claims name."""
    measured = {}
    for event in papers:
        run = store.read_stream(event.stream)
        evidence = gather(store, run, event.version)
        measured[evidence.paper.paper_id] = measured_score(evidence.paper, evidence.graded)
    return measured


def test_every_paper_is_reviewed_and_decided_before_the_campaign_ends(tmp_path: Path) -> None:
    # SQLite: the reviews read model's rebuild on PostgreSQL is in
    # tests/projections/test_rebuild.py (the mixed log holds reviews and decisions).
    settings = load_settings(data_dir=tmp_path / "data")
    # One thread: the labs take turns in a fixed order, so the campaign is the same on
    # every run. On three, which papers a lab read decided what it wrote next, and the
    # rating's rank correlation with the measured score (integer ratings, most of them 9)
    # went from 0.61 to 0.90 between runs of unchanged code: a CI run failed on it.
    # Reviews racing the campaign's end on several threads: test_review_rounds.py and
    # test_archive_reads.py.
    system = open_embedded(settings, threads=1)
    try:
        campaign = run_campaign(system, plan())
        store = system.store
        papers = of_campaign(store, campaign, "paper.submitted")
        assert len(papers) == 12
        finished = of_campaign(store, campaign, "campaign.finished")
        assert len(finished) == 1 and finished[0].payload.reason == "done"
        for paper in papers:
            assert isinstance(paper.payload, PaperSubmitted)
            stream = store.read_stream(review_stream(paper.payload.paper_id))
            assert [e.type for e in stream] == ["review.submitted"] * 2 + ["paper.decided"]
            assert all(e.causation_id == paper.id for e in stream)
            assert all(e.correlation_id == campaign for e in stream)
            decided = stream[-1].payload
            assert isinstance(decided, PaperDecided)
            assert decided.reviews == [e.id for e in stream[:2]]
            review = stream[0].payload
            assert isinstance(review, ReviewSubmitted) and review.relied_on[0] == paper.id
            # The decision comes before the campaign's end in the log.
            assert stream[-1].position < finished[0].position  # type: ignore[operator]

        # A review task delivered again writes nothing.
        count = store.count()
        for paper in papers[:3]:
            system.bus.send(REVIEW_TASK, paper.stream, paper.version)
        system.settle()
        assert store.count() == count

        incremental = rows(store)
        assert len(incremental["reviews"]) == 24 and len(incremental["paper_decisions"]) == 12
        system.runner.rebuild()
        assert rows(store) == incremental

        # Across the campaign, the rating follows the measured (verified) score.
        measured = paper_scores(store, papers)
        ratings = {r["paper_id"]: r["rating"] for r in incremental["reviews"]}
        ids = [p for p, score in measured.items() if score is not None]
        rho = stats.spearmanr([measured[p] for p in ids], [ratings[p] for p in ids]).statistic
        print(f"\ngrounded rating against measured score: Spearman {rho:.3f} over {len(ids)}")
        assert rho >= 0.7
    finally:
        system.close()


def test_a_lab_that_inflates_its_claims_is_rated_unsound_and_rejected(
    extra_policies: None, tmp_path: Path
) -> None:
    gym = tmp_path / "gym"  # continual-digits as a task that both policies may work on
    folder = shutil.copytree(GYM / "continual-digits", gym / "digits-inflated")
    card = (folder / "task.toml").read_text().replace('"continual-digits"', '"digits-inflated"')
    policies_line = 'policies = ["search", "inflating"]'
    shipped = 'policies = ["search", "llm", "agent"]'
    (folder / "task.toml").write_text(card.replace(shipped, policies_line))
    settings = load_settings(data_dir=tmp_path / "data", gym_path=[gym])
    system = open_embedded(settings, threads=3)
    try:
        honest = run_campaign(system, plan(seed=3, labs=2, papers=2, task="digits-inflated"))
        inflated = run_campaign(
            system, plan("inflating", seed=3, labs=2, papers=2, task="digits-inflated")
        )
        by_campaign = {}
        for campaign in (honest, inflated):
            reviews = [e.payload for e in of_campaign(system.store, campaign, "review.submitted")]
            decisions = [e.payload for e in of_campaign(system.store, campaign, "paper.decided")]
            assert len(reviews) == 8 and len(decisions) == 4
            by_campaign[campaign] = (reviews, decisions)
    finally:
        system.close()
    honest_reviews, honest_decisions = by_campaign[honest]
    inflated_reviews, inflated_decisions = by_campaign[inflated]
    assert all(r.form.soundness == 4 for r in honest_reviews)  # type: ignore[union-attr]
    assert all(r.form.soundness == 1 for r in inflated_reviews)  # type: ignore[union-attr]
    assert all(d.decision == "reject" for d in inflated_decisions)  # type: ignore[union-attr]
    assert any(d.decision == "accept" for d in honest_decisions)  # type: ignore[union-attr]
    mean = [
        sum(r.form.rating for r in rs) / len(rs)  # type: ignore[union-attr]
        for rs in (honest_reviews, inflated_reviews)
    ]
    assert mean[1] < mean[0]
