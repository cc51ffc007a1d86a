"""What the tests install for themselves is built once into the test cache, and a build
that fails says which and why (tests/cached_tools.py)."""

import sys
from pathlib import Path

import pytest

from tests.cached_tools import built_once


def test_a_folder_is_built_once_then_reused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LABRXIV_TEST_CACHE", str(tmp_path))
    runs = tmp_path / "runs.txt"

    def steps(folder: Path) -> list[list[str]]:
        script = f"open({str(runs)!r}, 'a').write('x'); import os; os.makedirs({str(folder)!r})"
        return [[sys.executable, "-c", script]]

    first = built_once("tool-1", "the tool", steps)
    assert first == tmp_path / "tool-1" and (first / ".installed").exists()
    assert built_once("tool-1", "the tool", steps) == first
    assert runs.read_text() == "x", "the second call built nothing"


def test_a_failed_build_names_the_tool_and_leaves_no_marker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LABRXIV_TEST_CACHE", str(tmp_path))
    monkeypatch.setattr("tests.needs.IN_CI", False)  # a skip, not a failure, to catch here
    failing = [[sys.executable, "-c", "import sys; sys.exit('no such package')"]]
    with pytest.raises(pytest.skip.Exception, match="installing the tool failed"):
        built_once("tool-2", "the tool", lambda folder: failing)
    assert not (tmp_path / "tool-2" / ".installed").exists()
    with pytest.raises(pytest.skip.Exception, match="no-such-program is not on PATH"):
        built_once("tool-3", "the tool", lambda folder: [], needs=("no-such-program",))
