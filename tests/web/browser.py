"""Headless Chromium for the browser tests: Debian's `chromium`, driven by Playwright
(`playwright install` downloads browsers from outside; the tests use the installed one).
Missing, it fails the test under CI=true (`.ci/run` installs it) and skips it elsewhere."""

import shutil
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn
from playwright.sync_api import Browser, sync_playwright

from events import EventStore
from labrxiv.web.app import create_app
from tests.needs import missing
from tests.ports import free_port

STARTING_S = 300.0
"""How long a server may take to listen before the test gives up on it: a guard against a
server that never starts, not a speed limit (on a loaded machine `labrxiv serve` took
over 30 s to import and catch its read models up)."""


@contextmanager
def chromium() -> Iterator[Browser]:
    """Debian's chromium, headless."""
    path = shutil.which("chromium")
    if path is None:
        missing("the browser tests need Debian's chromium (apt-get install chromium)")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=path, headless=True)
        try:
            yield browser
        finally:
            browser.close()


@contextmanager
def serving(store: EventStore) -> Iterator[str]:
    """The app over `store` on a free port of 127.0.0.1, in a thread; its base URL."""
    port = free_port()
    config = uvicorn.Config(create_app(store), host="127.0.0.1", port=port, log_level="warning")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + STARTING_S
    while not server.started:
        assert thread.is_alive(), f"the server did not start on port {port}"
        assert time.monotonic() < deadline, f"the server did not listen within {STARTING_S} s"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=STARTING_S)
