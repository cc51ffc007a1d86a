"""The `labrxiv` script's entry point: a Ctrl-C while the command line is still being
imported ends the command with one line and exit 130, not Python's traceback."""

import os
import subprocess
import sys
import tomllib
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from pathlib import Path
from types import ModuleType

import pytest
import typer
from typer.testing import CliRunner

from labrxiv.cli_errors import ShellGroup
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


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["campaign", "--labs", "0"], "labrxiv campaign: Invalid value for '--labs'"),
        (["ledger", "--by", "nope"], "labrxiv ledger: Invalid value for '--by'"),
        (["runs", "--no-such-option"], "labrxiv runs: No such option: --no-such-option"),
        (["no-such-command"], "labrxiv: No such command 'no-such-command'"),
    ],
)
def test_a_wrong_command_line_is_one_line_and_exit_2(argv: list[str], said: str) -> None:
    script = Path(sys.executable).parent / "labrxiv"
    done = subprocess.run([str(script), *argv], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(said), lines[0]
    assert "--help" in lines[0]
    assert done.stdout == ""


def test_an_exit_code_a_command_gives_is_the_scripts() -> None:
    script = Path(sys.executable).parent / "labrxiv"
    done = subprocess.run(
        [str(script), "runs", "show", "nope"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "LABRXIV_DATA_DIR": str(ROOT / ".no-such-data")},
    )
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr


def test_a_ctrl_c_before_the_command_handles_it_is_one_line_and_exit_130() -> None:
    """A Ctrl-C after the import but before the command set up its own handling (the
    campaign's checks, say): typer turned it into exit 130 with nothing said."""
    app = typer.Typer(cls=ShellGroup)

    @app.command()
    def starting() -> None:
        raise KeyboardInterrupt

    @app.command()
    def other() -> None:
        """A second command, so the first is named as a subcommand."""

    said = CliRunner().invoke(app, ["starting"])
    assert said.exit_code == 130, said.output
    lines = said.output.strip().splitlines()
    assert len(lines) == 1 and "interrupted (Ctrl-C)" in lines[0], said.output
    assert "labrxiv resume" in lines[0]
