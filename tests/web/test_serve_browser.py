"""`labrxiv serve` in headless Chromium: the archive searched, a paper's marks, reviews
and lineage, a campaign page that follows its campaign without a reload, a run's
findings linked to their steps, and a paper's script shown as text, never run."""

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, expect

from events import EventStore
from tests.web.browser import chromium, serving
from tests.web.conftest import caught_up
from tests.web.serve_log import (
    ARCHIVE,
    FINETUNE,
    HERDING,
    ISOLATED,
    SCRIPT,
    SCRIPTED,
    finishing_events,
)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as launched:
        yield launched


@pytest.fixture
def base(served_store: EventStore) -> Iterator[str]:
    with serving(served_store) as url:
        yield url


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context()
    opened = context.new_page()
    errors: list[str] = []
    opened.on("pageerror", lambda exc: errors.append(str(exc)))
    yield opened
    context.close()
    assert not errors, f"the page's script failed: {errors}"


def test_the_archive_is_searched(page: Page, base: str) -> None:
    page.goto(f"{base}/")
    expect(page.locator("table.papers tbody tr")).to_have_count(3)
    page.get_by_label("search").fill("learning rate")
    page.get_by_role("button", name="show").click()
    expect(page.locator("#count")).to_contain_text("1 paper(s) match")
    expect(page.locator("table.papers tbody tr")).to_have_count(1)
    page.get_by_role("link", name=FINETUNE).click()
    expect(page.locator("#paper-title")).to_have_text("Fine-tuning, gently")


def test_a_paper_shows_its_marks_reviews_and_lineage(page: Page, base: str) -> None:
    page.goto(f"{base}/papers/{HERDING}")
    claims = page.locator("table.claims tr.claim")
    expect(claims.nth(0)).to_contain_text("verified")
    expect(claims.nth(0).locator(".mark.yes")).to_have_count(1)
    expect(claims.nth(1).locator(".mark.no")).to_have_text("not verified")
    expect(page.locator(".review")).to_contain_text("forgetting overstated")
    expect(page.locator("#decision")).to_contain_text("accept")
    expect(page.locator("table.lineage tr.cited-by")).to_contain_text(FINETUNE)
    expect(page.locator("tr.retrieval")).to_contain_text(f"cited it in {FINETUNE}")
    claims.nth(0).locator("a.attempt-link").click()
    expect(page).to_have_url(f"{base}/runs/run-{ISOLATED}-0#attempt-1")
    expect(page.locator("#attempt-1")).to_be_visible()


def test_a_campaign_page_follows_its_campaign_without_a_reload(
    page: Page, base: str, served_store: EventStore
) -> None:
    page.goto(f"{base}/campaigns/{ARCHIVE}")
    expect(page.locator("#campaign-status")).to_have_text("running")
    row = page.locator(f'tr[data-run="run-{ARCHIVE}-0"]')
    expect(row.locator('[data-field="status"]')).to_have_text("running")
    expect(row.locator('[data-field="best_score"]')).to_have_text("0.530")
    page.evaluate("window.sameDocument = true")
    served_store.append(finishing_events())
    caught_up(served_store)
    expect(page.locator("#campaign-status")).to_have_text("finished (done)", timeout=20_000)
    expect(row.locator('[data-field="status"]')).to_have_text("finished (done)")
    expect(row.locator('[data-field="best_score"]')).to_have_text("0.880")
    expect(row.locator('[data-field="attempts"]')).to_have_text("2")
    expect(page.locator("#live")).to_have_text("finished")
    assert page.evaluate("window.sameDocument") is True, "the page was not reloaded"
    for axis in ("time", "attempts", "tokens", "dollars"):
        curve = page.locator(f'img.curve[data-axis="{axis}"]')
        assert curve.evaluate("img => img.complete && img.naturalWidth > 0"), axis


def test_a_runs_findings_link_to_their_steps(page: Page, base: str) -> None:
    page.goto(f"{base}/runs/run-{ISOLATED}-0")
    viewer = page.frame_locator("#trajectory")
    expect(viewer.locator(".verdict").first).to_have_text("FAIL")
    finding = viewer.locator(".finding").first
    expect(finding).to_contain_text("overconfidence")
    link = finding.locator("a.event-link").first
    target = link.get_attribute("href")
    assert target is not None and "-step-" in target
    link.click()
    expect(viewer.locator(target)).to_be_visible()
    expect(viewer.locator(target)).to_contain_text("paper.submitted")


def test_a_papers_script_is_shown_as_text(page: Page, base: str) -> None:
    page.goto(f"{base}/papers/{SCRIPTED}")
    expect(page.locator("#paper-title")).to_have_text(f"Exemplars {SCRIPT}")
    expect(page.locator("#paper-body")).to_contain_text(SCRIPT)
    assert page.evaluate("window.pwned === undefined"), "the paper's script ran"
    page.goto(f"{base}/papers?q=exemplars")
    expect(page.locator("table.papers")).to_contain_text(SCRIPT)
    assert page.evaluate("window.pwned === undefined"), "the paper's script ran"
