"""The `labrxiv` script's entry point: a Ctrl-C while the command line is still being
imported ends the command with one line and exit 130, not Python's traceback."""

import subprocess
import sys
import tomllib
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from pathlib import Path
from types import ModuleType

import pytest

from labrxiv.entry import EXIT_INTERRUPTED, main

ROOT = Path(__file__).resolve().parents[2]


class _CtrlCOnImport:
    """A meta path finder that raises Ctrl-C when `name` is imported, as a key pressed
    during the import would."""

    def __init__(self, name: str) -> None:
        self.name = name

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname == self.name:
            raise KeyboardInterrupt
        return None


def test_ctrl_c_while_importing_is_one_line_and_exit_130(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delitem(sys.modules, "labrxiv.cli", raising=False)
    monkeypatch.setattr(sys, "meta_path", [_CtrlCOnImport("labrxiv.cli"), *sys.meta_path])
    with pytest.raises(SystemExit) as stopped:
        main()
    assert stopped.value.code == EXIT_INTERRUPTED == 130
    err = capsys.readouterr().err
    assert err.strip() == "labrxiv: interrupted while starting; nothing was done"
    assert "Traceback" not in err


def test_the_script_runs_through_the_entry_point() -> None:
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["labrxiv"] == "labrxiv.entry:main"
    script = Path(sys.executable).parent / "labrxiv"
    done = subprocess.run([str(script), "--help"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "campaign" in done.stdout
