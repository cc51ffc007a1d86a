"""Arize Phoenix for tests: a virtualenv of its own, built once into a cache folder (it is
no dependency of labrxiv), and a `phoenix serve` started on free ports with its own
working folder, read back through its REST API.

The cache is `$LABRXIV_TEST_CACHE/arize-phoenix-<version>`, else the same name in
`.cache/` under the repository. A failed install or start fails the test under CI=true
and skips it elsewhere (tests/needs.py). Phoenix's settings, as its `phoenix.config`
names them: `PHOENIX_PORT` (HTTP: the UI, the REST API under `/v1` and OTLP/HTTP at
`/v1/traces`), `PHOENIX_GRPC_PORT` (OTLP/gRPC, unused here but bound), `PHOENIX_HOST`,
`PHOENIX_WORKING_DIR` (its SQLite database), `PHOENIX_TELEMETRY_ENABLED`.
"""

import json
import os
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.cached_tools import pip_venv
from tests.needs import missing
from tests.ports import free_port

VERSION = "20.26.1"
"""The Phoenix release the test reads back from (its REST API's span list is `GET
/v1/projects/{project}/spans`)."""
START_TIMEOUT_S = 180
REPO = Path(__file__).resolve().parents[2]


def phoenix_venv() -> Path:
    """The virtualenv holding Phoenix, installed the first time."""
    return pip_venv(f"arize-phoenix-{VERSION}", "Phoenix", f"arize-phoenix=={VERSION}")


@dataclass(frozen=True)
class Phoenix:
    """A running Phoenix."""

    url: str
    """Its HTTP base URL; OTLP/HTTP traces go to `{url}/v1/traces`."""
    log: Path

    def get(self, path: str, **query: Any) -> Any:
        """A GET of its REST API, as JSON."""
        address = f"{self.url}{path}" + (f"?{urllib.parse.urlencode(query)}" if query else "")
        with urllib.request.urlopen(address, timeout=30) as answer:
            return json.load(answer)

    def spans(self, project: str) -> list[dict[str, Any]]:
        """Every span of `project`, page by page (`next_cursor`)."""
        found: list[dict[str, Any]] = []
        cursor = None
        while True:
            query: dict[str, Any] = {"limit": 1000} | ({"cursor": cursor} if cursor else {})
            try:
                page = self.get(f"/v1/projects/{project}/spans", **query)
            except urllib.error.HTTPError as exc:
                if exc.code == 404:  # no span of the project has arrived yet
                    return []
                raise
            found.extend(page["data"])
            cursor = page.get("next_cursor")
            if not cursor:
                return found


@contextmanager
def running_phoenix(workdir: Path) -> Iterator[Phoenix]:
    """`phoenix serve` on free ports with `workdir` as its working folder, until the block
    ends; waits until its REST API answers."""
    venv = phoenix_venv()
    port = free_port()
    env = os.environ | {
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(free_port()),
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_WORKING_DIR": str(workdir),
        "PHOENIX_TELEMETRY_ENABLED": "false",
    }
    log = workdir / "phoenix.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [str(venv / "bin" / "phoenix"), "serve"],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
        )
    phoenix = Phoenix(f"http://127.0.0.1:{port}", log)
    try:
        _wait_until_up(phoenix, process)
        yield phoenix
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _wait_until_up(phoenix: Phoenix, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            missing(f"phoenix serve exited ({process.returncode}):\n{_tail(phoenix.log)}")
        try:
            phoenix.get("/v1/projects")
            return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.5)
    missing(f"phoenix serve did not answer in {START_TIMEOUT_S} s:\n{_tail(phoenix.log)}")


def _tail(log: Path) -> str:
    return log.read_text(errors="replace")[-3000:]
