"""What the shell prints, piped and in a terminal: a piped table is
whole (no 80-column cut, no "…" cells), a table in a terminal fits it by folding cells,
the campaign's table is printed once when piped and ends its line, and a log line
during a live table is printed above it."""

import io
import logging
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_support import ARCHIVE, ISOLATED, TASK, Cli
from rich.cells import cell_len
from rich.console import Console
from rich.live import Live
from rich.text import Text

from events import EventStore
from labrxiv.campaigns import run_campaign
from labrxiv.settings import load_settings
from labrxiv.views import campaigns_table, runs_table
from labrxiv.wiring import open_embedded
from projections.campaigns import campaign_modes, campaigns_of
from projections.runs import runs_of
from workers.lab.campaign import CampaignPlan


@pytest.fixture
def clean_logging() -> Iterator[None]:
    """The root logger's handlers and level, and the loggers' levels, as they were."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    levels = {name: logging.getLogger(name).level for name in logging.root.manager.loggerDict}
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
    for name, was in levels.items():
        logging.getLogger(name).setLevel(was)


def one_line(out: str, *cells: object) -> bool:
    """Whether one line holds `cells` in order, each whole, whatever lies between."""
    pattern = r"\W+".join(re.escape(str(cell)) for cell in cells)
    return re.search(rf"(?m)^\W*{pattern}\W", out) is not None


def test_a_piped_table_is_whole_whatever_the_terminal_width(
    two_campaigns: EventStore, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    said = cli("runs")  # CliRunner's output is not a terminal: as `labrxiv runs | less`
    assert said.code == 0, said.out
    for campaign, mode, status, best in [
        (ISOLATED, "isolated", "finished (done)", "0.790"),
        (ARCHIVE, "archive", "running", "0.530"),
    ]:
        run = f"run-{campaign}-0"
        assert one_line(said.out, run, campaign, mode, TASK, "lab-0", "search", status), said.out
        assert re.search(rf"(?m)^.*{run}.*{best}.*\d\d:\d\d:\d\d\W+\d\d:\d\d:\d\d\W*$", said.out)
    assert "…" not in said.out
    assert max(cell_len(line) for line in said.out.splitlines()) > 80, "not cut at 80"


@pytest.mark.parametrize("width", [80, 60])
def test_a_table_in_a_terminal_fits_it_by_folding_cells(
    two_campaigns: EventStore, width: int
) -> None:
    with two_campaigns.engine.connect() as conn:
        runs = runs_of(conn)
        modes = campaign_modes(conn)
        campaigns = campaigns_of(conn)
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=width, color_system=None)
    console.print(runs_table(runs, modes))
    console.print(campaigns_table(campaigns))
    shown = out.getvalue()
    assert "…" not in shown, shown
    assert all(cell_len(line) <= width for line in shown.splitlines()), shown


def test_a_piped_campaign_prints_its_table_once_and_ends_its_line(tmp_path: Path) -> None:
    plan = CampaignPlan(
        task="continual-digits", labs=1, papers=1, mode="isolated", seed=0, attempts=2
    )
    system = open_embedded(load_settings(data_dir=tmp_path / "data"), threads=2)
    out = io.StringIO()
    console = Console(file=out, width=80, force_terminal=False)  # a pipe
    try:
        outcome = run_campaign(system.bus, system.store, plan, console, timeout=300)
        system.settle()
    finally:
        system.close()
    assert outcome.finished
    console.print("next line")
    shown = out.getvalue()
    assert shown.count("┏") == 1 and shown.count("┗") + shown.count("└") == 1, shown
    assert re.search(r"(?m)^└[─┴]+┘\nnext line\n\Z", shown), shown


def test_a_log_line_during_a_live_table_is_printed_above_it(clean_logging: None) -> None:
    from labrxiv.console import configure_logging

    configure_logging("INFO")
    out = io.StringIO()
    terminal = Console(file=out, force_terminal=True, width=80, color_system=None)
    with Live(Text("THE TABLE"), console=terminal, auto_refresh=False) as live:
        live.refresh()
        logging.getLogger("labrxiv.campaigns").warning("database or broker away")
        live.refresh()
    shown = out.getvalue()
    assert "database or broker away" in shown, shown
    warned = shown.index("database or broker away")
    assert shown.index("THE TABLE", warned) > warned, "the table is drawn again below"
