"""Finding one's way through a log from the command line: campaigns, runs,
ids that the tables print and the commands take, `--json`, and the demo's data."""

import json
import re
from pathlib import Path

import pytest
from cli_support import ARCHIVE, FINETUNE, HERDING, ISOLATED, TASK, Cli, two_campaigns_events

from events import EventStore


def has_row(out: str, *cells: object) -> bool:
    """Whether a table line holds `cells` in order, whatever the box characters."""
    pattern = r"\W+".join(re.escape(str(cell)) for cell in cells)
    return re.search(rf"(?m)^\W*{pattern}\W", out) is not None


def test_campaigns_lists_each_campaign(two_campaigns: EventStore, cli: Cli) -> None:
    said = cli("campaigns")
    assert said.code == 0, said.out
    assert has_row(said.out, ISOLATED, TASK, "isolated", "search", 1, "finished (done)", "0.790")
    assert has_row(said.out, ARCHIVE, TASK, "archive", "search", 1, "running", "0.530")
    said = cli("campaigns", "--json")
    assert said.code == 0, said.out
    rows = {row["campaign"]: row for row in json.loads(said.stdout)}
    assert rows[ISOLATED]["mode"] == "isolated" and rows[ARCHIVE]["mode"] == "archive"
    assert rows[ISOLATED]["status"] == "finished" and rows[ISOLATED]["finish_reason"] == "done"
    assert rows[ARCHIVE]["best"] == 0.53 and rows[ARCHIVE]["runs"] == 1
    assert rows[ISOLATED]["started_at"].startswith("2026-03-01T09:00:00")


def test_runs_show_campaign_mode_and_task(two_campaigns: EventStore, cli: Cli) -> None:
    said = cli("runs")
    assert said.code == 0, said.out
    assert has_row(said.out, f"run-{ISOLATED}-0", ISOLATED, "isolated", TASK, "lab-0")
    assert has_row(said.out, f"run-{ARCHIVE}-0", ARCHIVE, "archive", TASK, "lab-0")
    said = cli("runs", "--campaign", "aaaa3")  # an unambiguous prefix
    assert said.code == 0, said.out
    assert f"run-{ARCHIVE}-0" in said.out and f"run-{ISOLATED}-0" not in said.out
    said = cli("runs", "--json", "--campaign", ISOLATED)
    (run,) = json.loads(said.stdout)
    assert run["stream"] == f"run-{ISOLATED}-0" and run["mode"] == "isolated"
    assert run["finish_reason"] == "done" and run["best_score"] == 0.79


def test_runs_show_one_run(two_campaigns: EventStore, cli: Cli) -> None:
    said = cli("runs", "show", f"run-{ISOLATED}-0")
    assert said.code == 0, said.out
    assert "finished (done): 1 paper written" in said.text
    assert has_row(said.out, "tool.invoked", 1) and has_row(said.out, "paper.submitted", 1)
    assert has_row(said.out, HERDING, "2026-03-01 09:00:05", "Herding exemplars")
    assert "best normalized 0.790" in said.text and f"campaign {ISOLATED} (isolated)" in said.text
    said = cli("runs", "show", f"{ARCHIVE}-0", "--json")  # `run-` may be left out
    assert said.code == 0, said.out
    shown = json.loads(said.stdout)
    assert shown["run"]["stream"] == f"run-{ARCHIVE}-0" and shown["run"]["status"] == "running"
    assert shown["events"]["papers.retrieved"] == 1
    assert [p["paper_id"] for p in shown["papers"]] == [FINETUNE]


def test_events_show_takes_a_position_or_an_id_prefix(two_campaigns: EventStore, cli: Cli) -> None:
    record = two_campaigns.read_records(after=2, limit=1)[0]
    said = cli("events", "show", str(record.position))
    assert said.code == 0, said.out
    assert json.loads(said.stdout)["id"] == str(record.id)
    said = cli("events", "show", record.id.hex[-12:])  # a unique tail is not a prefix
    assert said.code == 1
    prefix = next(
        record.id.hex[:n]
        for n in range(8, 33)
        if sum(e.id.hex.startswith(record.id.hex[:n]) for e in two_campaigns_events()) == 1
    )
    said = cli("events", "show", prefix, "--json")
    assert said.code == 0, said.out
    assert json.loads(said.stdout)["position"] == record.position


def test_events_tail_by_type_and_campaign(two_campaigns: EventStore, cli: Cli) -> None:
    said = cli("events", "tail", "--type", "paper.submitted")
    assert said.code == 0, said.out
    assert said.out.count("paper.submitted") == 2 and "run.started" not in said.out
    said = cli("events", "tail", "--type", "run.started", "--campaign", "aaaa1", "--json")
    assert said.code == 0, said.out
    (event,) = json.loads(said.stdout)
    assert event["stream"] == f"run-{ISOLATED}-0" and event["type"] == "run.started"


def test_ledger_by_lab_keeps_campaigns_apart(two_campaigns: EventStore, cli: Cli) -> None:
    """Both campaigns have a `lab-0`: they are two labs, not one with both labs' calls."""
    said = cli("ledger", "--by", "lab")
    assert said.code == 0, said.out
    assert has_row(said.out, ISOLATED, "lab-0", 1, 1, 0, 0, "2.0")
    assert has_row(said.out, ARCHIVE, "lab-0", 1, 1, 0, 0, "3.0")
    said = cli("ledger", "--by", "lab", "--json")
    rows = {(row["campaign"], row["key"]): row for row in json.loads(said.stdout)}
    assert rows[(ISOLATED, "lab-0")]["calls"] == 1 and rows[(ARCHIVE, "lab-0")]["calls"] == 1


def test_curves_lines_are_named_by_mode(
    two_campaigns: EventStore, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Per campaign, a line's label says isolated or archive, not only a hex id."""
    from labrxiv import plots

    drawn: list[set[str | None]] = []
    real = plots.write_curves

    def spy(points, papers, out, by="lab", directions=None, every=False):  # type: ignore[no-untyped-def]
        drawn.append({p.campaign for p in points})
        return real(points, papers, out, by=by, directions=directions, every=every)

    monkeypatch.setattr(plots, "write_curves", spy)
    said = cli("curves", "--out", "plots", "--by", "campaign")
    assert said.code == 0, said.out
    assert drawn == [{f"isolated {ISOLATED}", f"archive {ARCHIVE}"}]
    said = cli("curves", "--json")
    assert said.code == 0, said.out
    data = json.loads(said.stdout)
    assert {p["mode"] for p in data["points"]} == {"isolated", "archive"}


def test_papers_search_takes_unquoted_words(two_campaigns: EventStore, cli: Cli) -> None:
    said = cli("papers", "search", "herding", "ncm")
    assert said.code == 0, said.out
    assert HERDING in said.out and FINETUNE not in said.out


def test_papers_top_follows_the_task_cards_direction(two_campaigns: EventStore, cli: Cli) -> None:
    """`average_forgetting` is minimized (the card says so): least forgetting first."""
    said = cli("papers", "top", TASK, "--subtask", "average_forgetting")
    assert said.code == 0, said.out
    assert has_row(said.out, 1, FINETUNE, "lab-0", ARCHIVE, "average_forgetting", "0.1000")
    assert has_row(said.out, 2, HERDING, "lab-0", ISOLATED, "average_forgetting", "0.5000")
    said = cli("papers", "top", TASK, "--subtask", "average_forgetting", "--direction", "maximize")
    assert has_row(said.out, 1, HERDING)
    said = cli("papers", "top", TASK)  # the headline, final_accuracy, is maximized
    assert has_row(said.out, 1, HERDING, "lab-0", ISOLATED, "final_accuracy", "0.8000")


def test_campaign_filters_and_paper_prefixes(two_campaigns: EventStore, cli: Cli) -> None:
    said = cli("papers", "list", "--campaign", "aaaa3")
    assert said.code == 0 and FINETUNE in said.out and HERDING not in said.out
    said = cli("papers", "top", TASK, "--campaign", "aaaa1", "--subtask", "average_forgetting")
    assert said.code == 0 and HERDING in said.out and FINETUNE not in said.out
    said = cli("papers", "search", "exemplars", "--campaign", "aaaa3")
    assert said.code == 1 and "no paper" in said.text
    said = cli("papers", "show", "p-1111")
    assert said.code == 0 and "Herding exemplars" in said.out
    said = cli("papers", "show", "1111")  # `p-` may be left out of a prefix too
    assert said.code == 0 and "Herding exemplars" in said.out
    said = cli("runs", "show", ISOLATED[:5])  # a prefix without `run-`
    assert said.code == 0 and f"run-{ISOLATED}-0" in said.out, said.out


@pytest.mark.parametrize(
    "command",
    [
        ["status"],
        ["campaigns"],
        ["runs"],
        ["runs", "show", f"run-{ISOLATED}-0"],
        ["events", "tail"],
        ["events", "show", "1"],
        ["events", "dead"],
        ["papers", "list"],
        ["papers", "show", HERDING],
        ["papers", "search", "herding"],
        ["papers", "top", TASK],
        ["ledger"],
        ["curves"],
    ],
    ids=" ".join,
)
def test_every_read_command_speaks_json(
    two_campaigns: EventStore, cli: Cli, command: list[str]
) -> None:
    said = cli(*command, "--json")
    assert said.code == 0, said.out
    json.loads(said.stdout)


def test_read_commands_find_the_demos_data(workdir: Path, cli: Cli) -> None:
    """After `make demo` (its log in `.labrxiv/demo`), a plain `labrxiv runs` reads it and
    says so, rather than creating an empty `.labrxiv/labrxiv.db` and printing nothing."""
    demo = workdir / ".labrxiv" / "demo"
    EventStore.from_url(f"sqlite:///{demo / 'labrxiv.db'}").append(two_campaigns_events())
    said = cli("projector", "--once", LABRXIV_DATA_DIR=str(demo))
    assert said.code == 0, said.out
    said = cli("runs")
    assert said.code == 0, said.out
    assert f"run-{ISOLATED}-0" in said.out
    assert "reading the demo's data in .labrxiv/demo" in said.text
    assert not (workdir / ".labrxiv" / "labrxiv.db").exists()
    said = cli("campaigns", "--json")  # the note goes to stderr: stdout stays JSON
    assert said.code == 0 and len(json.loads(said.stdout)) == 2
    # An empty log that a read command of an older labrxiv made holds no log either.
    EventStore.from_url(f"sqlite:///{workdir / '.labrxiv' / 'labrxiv.db'}")
    said = cli("runs")
    assert said.code == 0 and f"run-{ISOLATED}-0" in said.out, said.out


def test_makefile_demo_prints_the_next_commands() -> None:
    makefile = (Path(__file__).resolve().parents[2] / "Makefile").read_text()
    target = makefile.split("\ndemo:", 1)[1].split("\n\n", 1)[0]
    assert "LABRXIV_DATA_DIR=.labrxiv/demo" in target
    for command in ("campaigns", "runs", "papers top"):
        assert command in target, command
    assert "echo" in target
