"""An `llm` campaign run from a shell, piped, against a local OpenAI-compatible server:
no library INFO line (httpx's request line, the gateway's per-call
line) by default, every one with LABRXIV_LOG_LEVEL=DEBUG; the table once, whole.

The campaign runs in a child process, as a person runs it: the logging set-up of this
test process (pytest's own handlers) would hide what the command does."""

import os
import re
import subprocess
import sys
from pathlib import Path

from fake_server import FakeServer, completion, usage

KEY = "sk-quiet-logs-test-key-0123456789"
LABRXIV = Path(sys.executable).with_name("labrxiv")


def run_llm_campaign(tmp_path: Path, **settings: str) -> subprocess.CompletedProcess[str]:
    """A one-lab `llm` campaign whose token budget ends it after a few model calls."""
    with FakeServer(models=("fake-model",)) as server:
        server.default = completion(text="Thinking.", usage=usage(5, 1))
        env = {k: v for k, v in os.environ.items() if not k.startswith(("LABRXIV_", "OPENAI_"))}
        env |= {
            "OPENAI_API_KEY": KEY,
            "OPENAI_BASE_URL": server.url,
            "LABRXIV_DATA_DIR": str(tmp_path / "data"),
            "LABRXIV_LLM_TIMEOUT": "5",
            "COLUMNS": "80",
        } | settings
        args = ["campaign", "--task", "math-prompting", "--policy", "llm", "--model", "fake-model"]
        args += ["--labs", "1", "--papers", "1", "--tokens", "20", "--timeout", "120"]
        said = subprocess.run(
            [str(LABRXIV), *args], env=env, capture_output=True, text=True, timeout=300
        )
        assert len(server.completions()) >= 2, said.stderr
    assert said.returncode == 0, said.stdout + said.stderr
    return said


def test_no_library_info_line_by_default(tmp_path: Path) -> None:
    said = run_llm_campaign(tmp_path)
    assert "HTTP Request" not in said.stderr and "httpx" not in said.stderr, said.stderr
    assert "model call" not in said.stderr, said.stderr
    assert " INFO " not in said.stdout + said.stderr, said.stderr
    # Piped: the table once, its bottom border a line of its own.
    assert said.stdout.count("┏") == 1, said.stdout
    assert re.search(r"(?m)^└[─┴]+┘\n", said.stdout), said.stdout


def test_debug_shows_every_library_line(tmp_path: Path) -> None:
    said = run_llm_campaign(tmp_path, LABRXIV_LOG_LEVEL="DEBUG")
    assert re.search(r"(?m)httpx2: HTTP Request: POST .*/chat/completions", said.stderr)
    assert re.search(r"(?m)workers\.llm\.gateway: model call .* answered in", said.stderr)
