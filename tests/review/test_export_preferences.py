"""`labrxiv export preferences` on a reviewed campaign made through the real system: each
line validates against the documented format (docs/review.md, "Training data"), the
chosen paper is the best-reviewed of its task and cycle and the rejected the worst; with
nothing to pair the output is empty and a message says why."""

import re
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from events.payloads import ReviewConfig
from labrxiv.cli import app
from labrxiv.settings import load_settings
from labrxiv.wiring import open_embedded
from projections.preferences import PreferencePair
from workers.lab.campaign import CampaignPlan, start_campaign

DOCS = (Path(__file__).resolve().parents[2] / "docs" / "review.md").read_text()


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A log with a reviewed campaign (three labs, two papers each) and one not reviewed
    (one lab)."""
    folder = tmp_path_factory.mktemp("prefs")
    system = open_embedded(load_settings(data_dir=folder), threads=3)
    try:
        for review, labs in ((ReviewConfig(), 3), (None, 1)):
            plan = CampaignPlan(
                task="continual-digits",
                labs=labs,
                papers=2,
                mode="archive",
                seed=1,
                attempts=4 if review is None else 6,
                review=review,
            )
            start_campaign(system.bus, plan)
            system.settle()
    finally:
        system.close()
    return folder


def export(data_dir: Path, monkeypatch: pytest.MonkeyPatch, *args: str) -> tuple[int, str, str]:
    monkeypatch.setenv("LABRXIV_DATA_DIR", str(data_dir))
    result = CliRunner().invoke(app, ["export", "preferences", *args])
    return result.exit_code, result.stdout, result.stderr


def test_the_documented_keys_are_the_format() -> None:
    section = DOCS.split("## Training data", 1)[1]
    documented = re.findall(r"^\| `(\w+)` \|", section, re.MULTILINE)
    assert documented == list(PreferencePair.model_fields)


def test_pairs_validate_and_prefer_the_best_reviewed(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    code, stdout, _ = export(data_dir, monkeypatch)
    assert code == 0
    lines = [orjson.loads(line) for line in stdout.splitlines()]
    assert lines, "a reviewed campaign of six papers in one round gives a pair"
    for line in lines:
        pair = PreferencePair.model_validate(line)  # the documented format, no other key
        assert set(line) == set(PreferencePair.model_fields)
        assert pair.prompt.startswith("Write a research paper on the task continual-digits.")
        assert pair.chosen.startswith("# ") and pair.rejected.startswith("# ")
        assert pair.chosen_paper != pair.rejected_paper and pair.round == 1
        assert pair.chosen_scores["rating"] > pair.rejected_scores["rating"]
        assert len(pair.chosen_events) == 2 and len(pair.rejected_events) == 2  # paper, review
        assert pair.papers == 6
    # The chosen and rejected are the best and worst the papers command shows.
    monkeypatch.setenv("LABRXIV_DATA_DIR", str(data_dir))
    shown = CliRunner().invoke(app, ["papers", "list", "--json"])
    ratings = {
        p["paper_id"]: p["decision"]["mean_rating"]
        for p in orjson.loads(shown.output)
        if p["decision"] is not None
    }
    assert len(ratings) == 6
    assert ratings[lines[0]["chosen_paper"]] == max(ratings.values())
    assert ratings[lines[0]["rejected_paper"]] == min(ratings.values())
    code, stdout, stderr = export(data_dir, monkeypatch, "-o", str(tmp_path / "p.jsonl"))
    assert code == 0 and (tmp_path / "p.jsonl").read_text().splitlines() == [
        orjson.dumps(line).decode() for line in lines
    ]


def test_nothing_to_pair_is_empty_with_a_reason(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LABRXIV_DATA_DIR", str(data_dir))
    campaigns = orjson.loads(CliRunner().invoke(app, ["campaigns", "--json"]).output)
    unreviewed = campaigns[-1]["campaign"]
    code, stdout, stderr = export(data_dir, monkeypatch, "--campaign", unreviewed)
    assert code == 0 and stdout == ""
    assert "none of these papers has been reviewed" in stderr
    code, stdout, stderr = export(data_dir, monkeypatch, "--task", "ts-saliency")
    assert code == 0 and stdout == "" and "no paper in the archive matches" in stderr
