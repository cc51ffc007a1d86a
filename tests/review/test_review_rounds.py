"""The review → revise cycle through the real system: a lab that has written its papers
records that it awaits their reviews, is woken by the decision, records what it read,
and answers with work: a new version that revises its paper and names the reviews it
answers, itself reviewed and decided; never more versions than the campaign's rounds."""

from pathlib import Path

from events import Event
from events.payloads import (
    PaperDecided,
    PaperSubmitted,
    ReviewAwaited,
    ReviewConfig,
    ReviewReceived,
)
from events.streams import review_stream
from labrxiv.campaigns import progress_table
from labrxiv.settings import load_settings
from labrxiv.wiring import open_embedded
from projections.archive import list_papers
from projections.runs import runs_of
from workers.lab.campaign import CampaignPlan, start_campaign
from workers.lab.step import LAB_STEP_TASK


def test_labs_revise_their_papers_answering_the_reviews(tmp_path: Path) -> None:
    system = open_embedded(load_settings(data_dir=tmp_path / "data"), threads=3)
    try:
        plan = CampaignPlan(
            task="continual-digits",
            labs=3,
            papers=1,
            mode="archive",
            seed=4,
            attempts=9,
            review=ReviewConfig(rounds=2),
        )
        campaign, runs = start_campaign(system.bus, plan)
        system.settle()
        store = system.store
        revisions = 0
        for run in runs:
            events = store.read_stream(run)
            assert events[-1].type == "run.finished" and events[-1].payload.reason == "done"
            papers = [e for e in events if isinstance(e.payload, PaperSubmitted)]
            assert 1 <= len(papers) <= 3  # the first paper and at most two revisions
            for earlier, later in zip(papers, papers[1:], strict=False):
                revisions += 1
                old, new = earlier.payload, later.payload
                assert isinstance(old, PaperSubmitted) and isinstance(new, PaperSubmitted)
                assert new.revises == old.paper_id
                reviews = store.read_stream(review_stream(old.paper_id))
                decided = reviews[-1].payload
                assert isinstance(decided, PaperDecided) and decided.run == run
                assert new.answers == decided.reviews
                assert "## Response to the reviews" in new.body
                # awaited, then received (after the decision), then the revision's work
                between = [e for e in events if earlier.version < e.version < later.version]
                awaited = _only(between, ReviewAwaited)
                received = _only(between, ReviewReceived)
                assert awaited.version < received.version
                assert received.position > reviews[-1].position  # type: ignore[operator]
                assert isinstance(received.payload, ReviewReceived)
                assert received.payload.reviews == decided.reviews
                assert any(e.type == "experiment.scored" for e in between)
                # "went from X to Y" only for a best the revision's own work found (it
                # once credited a revision with a best measured before the paper it answers)
                claimed = next(c.attempt for c in new.claims if c.subtask == "final_accuracy")
                fresh = {e.payload.attempt for e in between if e.type == "experiment.scored"}
                if "went from" in new.body:
                    assert claimed in fresh, new.body
                else:
                    assert "None of them beat our best" in new.body, new.body
            last = papers[-1].payload
            assert isinstance(last, PaperSubmitted)
            decided_last = store.read_stream(review_stream(last.paper_id))[-1].payload
            assert isinstance(decided_last, PaperDecided)
            if len(papers) < 3:  # it stopped early: its last paper had nothing to answer
                said = [e.payload for e in events if isinstance(e.payload, ReviewReceived)]
                assert said and said[-1].decision == "accept" and not said[-1].weaknesses
        assert revisions >= 1, "some lab revised (seed 4: a first paper at the baseline)"
        with store.engine.connect() as conn:
            shown = {p.paper_id: p for p in list_papers(conn, campaign=campaign)}
        for paper in shown.values():
            if paper.revises:
                assert paper.version == shown[paper.revises].version + 1
        finished = store.read_records(types=["campaign.finished"], correlation=campaign)
        assert len(finished) == 1
        # The runs read model keeps revisions apart, and the live table shows each lab's
        # papers against the one asked for (it showed 3/1 for a lab that revised twice).
        system.runner.catch_up()
        with store.engine.connect() as conn:
            views = runs_of(conn, campaign=campaign)
        assert sum(v.revisions for v in views) == revisions
        cells = [row for column in progress_table(views, plan, "t").columns
                 if column.header == "papers" for row in column._cells]  # fmt: skip
        assert all(cell.startswith("1/1") for cell in cells), cells
        assert any("revised" in cell for cell in cells)

        # A wake-up sent again (the reaper, a redelivery) changes nothing.
        count = store.count()
        for run in runs:
            for event in store.read_stream(run):
                if isinstance(event.payload, ReviewAwaited):
                    system.bus.send(LAB_STEP_TASK, run, event.version)
        system.settle()
        assert store.count() == count
    finally:
        system.close()


def _only(events: list[Event], kind: type) -> Event:
    found = [e for e in events if isinstance(e.payload, kind)]
    assert len(found) == 1, [e.type for e in events]
    return found[0]
