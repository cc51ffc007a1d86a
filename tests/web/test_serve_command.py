"""`labrxiv serve` as a person starts it: on the demo's data (found as the read commands
find it), in a process of its own, looked at in Chromium; and its refusals."""

import os
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from playwright.sync_api import expect
from typer.testing import CliRunner

from events import EventStore
from labrxiv.cli import app
from projections.campaigns import CampaignInfo, campaigns_of
from tests.ports import free_port
from tests.web.browser import STARTING_S, chromium, serving

LABRXIV = [sys.executable, "-c", "from labrxiv.entry import main; main()"]


def _env(data: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LABRXIV_")}
    return env | {"LABRXIV_DATA_DIR": str(data), "COLUMNS": "200"}


@pytest.fixture(scope="module")
def demo_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data folder after a small `labrxiv demo` (its log is in `data/demo`)."""
    folder = tmp_path_factory.mktemp("served-demo")
    data = folder / "data"
    demo = ["demo", "--labs", "1", "--papers", "1", "--attempts", "2"]
    command = [*LABRXIV, *demo, "--report", str(folder / "report")]
    done = subprocess.run(command, env=_env(data), cwd=folder, capture_output=True, timeout=600)
    assert done.returncode == 0, done.stdout.decode() + done.stderr.decode()
    return data


def _get(url: str) -> bytes | None:
    try:
        with urllib.request.urlopen(url, timeout=5) as answer:
            body: bytes = answer.read()
            return body
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return None


@pytest.fixture
def served_demo(demo_data: Path) -> Iterator[str]:
    """`labrxiv serve` on a free port over the demo's data; its base URL."""
    port = free_port()
    command = [*LABRXIV, "serve", "--port", str(port)]
    server = subprocess.Popen(
        command, env=_env(demo_data), stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + STARTING_S
        while _get(f"{base}/api/v1/campaigns") is None:
            if server.poll() is not None:
                said = server.stdout.read().decode() if server.stdout else ""
                pytest.fail(f"labrxiv serve exited {server.returncode}: {said}")
            assert time.monotonic() < deadline, f"labrxiv serve did not answer on port {port}"
            time.sleep(0.1)
        yield base
    finally:
        server.terminate()
        server.wait(timeout=STARTING_S)


@pytest.mark.slow
def test_the_demos_data_is_served(served_demo: str) -> None:
    campaigns = orjson.loads(_get(f"{served_demo}/api/v1/campaigns") or b"[]")
    assert sorted(c["mode"] for c in campaigns) == ["archive", "isolated"]
    archive = next(c for c in campaigns if c["mode"] == "archive")
    with chromium() as browser:
        page = browser.new_page()
        page.goto(f"{served_demo}/campaigns")
        page.get_by_role("link", name=archive["campaign"]).click()
        assert page.locator("#campaign-status").inner_text().startswith("finished")
        assert page.locator("#runs tbody tr").count() == archive["runs"]
        page.get_by_role("link", name="its papers").click()
        rows = page.locator("table.papers tbody tr")
        assert rows.count() >= 1
        rows.first.locator("td.id a").first.click()
        assert page.locator("table.claims tr.claim").count() >= 1
        assert page.locator("table.claims .mark").count() >= 1


def test_serve_without_a_log_says_so(tmp_path: Path) -> None:
    said = CliRunner().invoke(app, ["serve"], env=_env(tmp_path / "empty"))
    assert said.exit_code == 1
    assert "no log in" in said.output


def test_serve_refuses_a_port_out_of_range(tmp_path: Path) -> None:
    said = CliRunner().invoke(app, ["serve", "--port", "70000"], env=_env(tmp_path))
    assert said.exit_code == 2
    assert "Invalid value for '--port'" in said.output


def test_serve_on_a_port_it_cannot_listen_on_says_so_in_one_line(tmp_path: Path) -> None:
    """Said before anything claims to serve, and exit 1: not "serving … on :PORT", then
    uvicorn's own error and exit 3."""
    EventStore.from_url(f"sqlite:///{tmp_path / 'data' / 'labrxiv.db'}")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        said = CliRunner().invoke(app, ["serve", "--port", str(port)], env=_env(tmp_path / "data"))
    assert said.exit_code == 1, said.output
    assert "serving" not in said.output
    lines = said.output.strip().splitlines()
    assert (
        len(lines) == 1 and f"cannot listen on 127.0.0.1:{port}: Address already in use" in lines[0]
    )


@pytest.mark.slow
def test_a_campaign_page_follows_a_campaign_running_beside_it(
    data_dir: Path, served_store: EventStore
) -> None:
    known = {c.campaign for c in campaigns_of_store(served_store)}
    command = [*LABRXIV, "campaign", "--task", "continual-digits", "--labs", "1"]
    command += ["--papers", "1", "--attempts", "8"]
    with serving(served_store) as base, chromium() as browser:
        campaign = subprocess.Popen(
            command, env=_env(data_dir), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        try:
            new = _new_campaign(base, known, campaign)
            page = browser.new_page()
            page.goto(f"{base}/campaigns/{new}")
            page.evaluate("window.sameDocument = true")
            events = page.locator('#runs tbody tr [data-field="event_count"]').first
            first = int(events.inner_text() or 0)
            expect(page.locator("#campaign-status")).to_have_text(
                re.compile(r"^finished"), timeout=300_000
            )
            assert int(events.inner_text()) > first, "the run's events grew on the page"
            assert page.evaluate("window.sameDocument") is True, "the page was not reloaded"
        finally:
            said = campaign.communicate(timeout=300)[1].decode()
        assert campaign.returncode == 0, said


def _new_campaign(base: str, known: set[str], campaign: subprocess.Popen[bytes]) -> str:
    """The id of the campaign `campaign` started, once the server lists it."""
    deadline = time.monotonic() + 120
    while True:
        listed = orjson.loads(_get(f"{base}/api/v1/campaigns") or b"[]")
        new = [c["campaign"] for c in listed if c["campaign"] not in known and c["runs"]]
        if new:
            return str(new[0])
        assert campaign.poll() is None, "the campaign ended before the server listed it"
        assert time.monotonic() < deadline, "the server never listed the new campaign"
        time.sleep(0.2)


def campaigns_of_store(store: EventStore) -> list[CampaignInfo]:
    with store.engine.connect() as conn:
        return campaigns_of(conn)
