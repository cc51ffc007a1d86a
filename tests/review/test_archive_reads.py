"""Archive labs that read only accepted papers (`--archive-reads accepted`) are shown
nothing else: every paper a run retrieved had been accepted, in the log, before it was
shown; labs that read all papers are shown rejected ones too."""

from pathlib import Path

from events import EventStore
from events.payloads import ReviewConfig
from labrxiv.settings import load_settings
from labrxiv.wiring import open_embedded
from workers.lab.campaign import CampaignPlan, start_campaign


def retrievals(store: EventStore, campaign: str) -> list[tuple[int, list[str]]]:
    records = store.iter_records(types=["papers.retrieved"], correlation=campaign)
    return [(r.position, r.payload["paper_ids"]) for r in records]


def decisions(store: EventStore, campaign: str) -> dict[str, tuple[int, str]]:
    records = store.iter_records(types=["paper.decided"], correlation=campaign)
    return {r.payload["paper_id"]: (r.position, r.payload["decision"]) for r in records}


def test_labs_reading_accepted_papers_are_shown_only_accepted_ones(tmp_path: Path) -> None:
    system = open_embedded(load_settings(data_dir=tmp_path / "data"), threads=3)
    try:
        campaigns = {}
        for reads in ("accepted", "all"):
            plan = CampaignPlan(
                task="continual-digits",
                labs=3,
                papers=2,
                mode="archive",
                seed=2,
                attempts=6,
                review=ReviewConfig(),
                archive_reads=reads,  # type: ignore[arg-type]
            )
            campaigns[reads], _ = start_campaign(system.bus, plan)
            system.settle()
        store = system.store
        shown = retrievals(store, campaigns["accepted"])
        decided = decisions(store, campaigns["accepted"])
        assert any(ids for _, ids in shown), "the labs searched and were shown papers"
        assert any(d == "reject" for _, d in decided.values()), "some papers were rejected"
        for position, ids in shown:
            for paper_id in ids:
                at, decision = decided[paper_id]
                assert decision == "accept" and at < position, paper_id
        everything = decisions(store, campaigns["all"])
        rejected = {p for p, (_, d) in everything.items() if d == "reject"}
        seen = {p for _, ids in retrievals(store, campaigns["all"]) for p in ids}
        assert seen & rejected, "labs reading every paper were shown rejected ones"
    finally:
        system.close()
