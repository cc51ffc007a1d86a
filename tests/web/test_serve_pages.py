"""The server-rendered pages: what they show, that the log's text is only ever text, and
errors as pages."""

import html
import re

import pytest
from fastapi.testclient import TestClient

from tests.web.serve_log import ARCHIVE, FINETUNE, HERDING, IMAGE, ISOLATED, SCRIPT, SCRIPTED


def _text(page: str) -> str:
    """The page's words, tags dropped, entities read, whitespace collapsed."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())


def test_the_archive_lists_papers_with_their_marks_and_decisions(client: TestClient) -> None:
    page = client.get("/")
    assert page.status_code == 200
    shown = _text(page.text)
    assert "3 paper(s), in submission order" in shown
    for paper in (HERDING, SCRIPTED, FINETUNE):
        assert f'href="/papers/{paper}"' in page.text
    assert "accept" in shown and "verified" in shown and "not verified" in shown


def test_the_archive_searches_and_filters(client: TestClient) -> None:
    hits = _text(client.get("/papers?q=gently+learning").text)
    assert "1 paper(s) match" in hits and FINETUNE in hits and HERDING not in hits
    accepted = client.get("/papers?decision=accept").text
    assert HERDING in accepted and FINETUNE not in accepted
    paged = client.get("/papers?per_page=1&page=2").text
    assert SCRIPTED in paged and HERDING not in paged
    assert 'rel="next"' in paged and 'rel="prev"' in paged


def test_a_paper_shows_claims_reviews_decision_and_lineage(client: TestClient) -> None:
    page = client.get(f"/papers/{HERDING[:8]}")
    shown = _text(page.text)
    assert "Herding exemplars" in shown
    claims = re.findall(r'<tr class="claim">(.*?)</tr>', page.text, re.S)
    assert len(claims) == 2
    assert "final_accuracy" in claims[0] and "mark yes" in claims[0]
    assert "average_forgetting" in claims[1] and "mark no" in claims[1]
    cells = re.findall(r'<td class="num">(.*?)</td>', claims[1])
    assert cells == ["0.3000", "0.5000"], "an unverified claim beside what was measured"
    assert f'href="/runs/run-{ISOLATED}-0#attempt-1"' in claims[0]
    assert "rating 7/10" in shown and "forgetting overstated" in shown
    assert "decision: accept (mean rating 7.0" in shown
    assert f"cited by {FINETUNE} lab-0 Fine-tuning, gently" in shown
    assert f"run-{ARCHIVE}-0 lab-0 1 herding cited it in {FINETUNE}" in shown
    cites = _text(client.get(f"/papers/{FINETUNE}").text)
    assert f"cites {HERDING} lab-0 Herding exemplars" in cites


def test_a_papers_markup_is_shown_as_text(client: TestClient) -> None:
    page = client.get(f"/papers/{SCRIPTED}")
    assert page.status_code == 200
    assert SCRIPT not in page.text and IMAGE not in page.text
    assert "&lt;script&gt;window.pwned = 1&lt;/script&gt;" in page.text
    assert page.text.count("<script") == 0, "the paper page runs no script"
    policy = page.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "unsafe-inline" not in policy
    listed = client.get("/papers").text
    assert SCRIPT not in listed and "Exemplars &lt;script&gt;" in listed


def test_a_campaign_shows_its_runs_spend_and_curves(client: TestClient) -> None:
    page = client.get(f"/campaigns/{ARCHIVE}")
    assert page.status_code == 200
    assert f'data-run="run-{ARCHIVE}-0"' in page.text
    assert 'id="campaign-status">running' in page.text
    assert '<script src="/static/campaign.js">' in page.text
    curve = client.get(f"/campaigns/{ARCHIVE}/curves/attempts.svg")
    assert curve.headers["content-type"] == "image/svg+xml"
    assert "<polyline" in curve.text and "lab-0" in curve.text
    assert client.get(f"/campaigns/{ARCHIVE}/curves/colour.svg").status_code == 404
    assert client.get("/static/campaign.js").status_code == 200
    listed = _text(client.get("/campaigns").text)
    assert f"{ISOLATED} continual-digits isolated search 1 finished (done)" in listed


def test_a_run_shows_its_attempts_and_frames_its_trajectory(client: TestClient) -> None:
    page = client.get(f"/runs/run-{ISOLATED}-0")
    assert 'id="attempt-1"' in page.text
    assert f'href="/papers/{HERDING}"' in page.text
    assert f'src="/runs/run-{ISOLATED}-0/trajectory"' in page.text
    trajectory = client.get(f"/runs/run-{ISOLATED}-0/trajectory")
    assert trajectory.status_code == 200
    assert 'id="analysis-data"' in trajectory.text
    assert trajectory.headers["content-security-policy"] == "frame-ancestors 'self'"
    assert SCRIPT not in trajectory.text, "the trajectory's data is escaped JSON"


@pytest.mark.parametrize(
    ("url", "status", "reason"),
    [
        ("/papers/p-ffff", 404, "no paper p-ffff"),
        ("/runs/run-ffff", 404, "no run run-ffff"),
        ("/runs/run-ffff/trajectory", 404, "no run run-ffff"),
        ("/campaigns/ffff", 404, "no campaign ffff"),
        ("/no/such/page", 404, "no such page"),
        ("/papers?page=-1", 400, "page: Input should be greater than or equal to 1"),
        ("/papers?decision=maybe", 400, "decision 'maybe'"),
        ("/runs?campaign=ffff", 400, "campaign filter: no campaign ffff"),
    ],
)
def test_errors_are_pages_with_their_reason(
    client: TestClient, url: str, status: int, reason: str
) -> None:
    page = client.get(url)
    assert page.status_code == status
    assert page.headers["content-type"].startswith("text/html")
    assert reason in _text(page.text)
    assert f"{status} " in _text(page.text)
