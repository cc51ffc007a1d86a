"""`labrxiv serve` as a person starts it: on the demo's data (found as the read commands
find it), in a process of its own, looked at in Chromium; and its refusals."""

import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from labrxiv.cli import app
from tests.ports import free_port
from tests.web.browser import STARTING_S, chromium

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
    except (urllib.error.URLError, ConnectionError):
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
        assert page.locator("#runs tbody tr").count() == len(archive["runs"])
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
